#include "app/load.hpp"

#include "systems/system_kinds.hpp"

namespace dtsim::app {

scenario::ScenarioSpec load_for_simulation(const std::string& path, const std::vector<std::string>& overrides)
{
  scenario::ScenarioSpec s = scenario::load_scenario(path, overrides);
  systems::system_kind(s).complete(s);
  return s;
}

}  // namespace dtsim::app
