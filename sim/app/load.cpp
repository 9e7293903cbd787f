#include "app/load.hpp"

#include "wafer/micro_batch.hpp"

namespace dtsim::app {

scenario::ScenarioSpec load_for_simulation(const std::string& path, const std::vector<std::string>& overrides)
{
  scenario::ScenarioSpec s = scenario::load_scenario(path, overrides);
  wafer::resolve_micro_batch(s);
  return s;
}

}  // namespace dtsim::app
