#include "app/derived_inputs.hpp"

#include "app/load.hpp"

namespace dtsim::app {

bool is_file_key(const std::string& key) { return key.rfind("hardware.", 0) == 0 || key.rfind("model.", 0) == 0; }

scenario::ScenarioSpec load_with_file_keys(const std::string& scenario, const std::vector<std::string>& overrides,
                                           bool quiet)
{
  return load_for_simulation(scenario, overrides, quiet);
}

}  // namespace dtsim::app
