#include "app/load.hpp"

#include <mutex>
#include <set>

#include "systems/system_kinds.hpp"

namespace dtsim::app {

scenario::ScenarioSpec load_for_simulation(const std::string& path, const std::vector<std::string>& overrides,
                                           bool quiet)
{
  scenario::ScenarioSpec s = scenario::load_scenario(path, overrides);
  systems::system_kind(s).complete(s);
  if (!quiet) {
    static std::mutex mutex;
    static std::set<std::string> printed;
    const std::lock_guard<std::mutex> lock(mutex);
    for (const auto& w : s.warnings)
      if (printed.insert(w.where.str() + w.key_path + w.message).second)
        warn(w);
  }
  return s;
}

}  // namespace dtsim::app
