#include "app/simulate.hpp"

#include <chrono>

#include "systems/system_kinds.hpp"
#include "parallel/plan.hpp"

namespace dtsim::app {

report::RunReport check_fit(const scenario::ScenarioSpec& s)
{
  return systems::system_kind(s).check_fit(s, parallel::derive_plan(s));
}

report::RunReport simulate(const scenario::ScenarioSpec& s, bool record_trace)
{
  const auto t0 = std::chrono::steady_clock::now();
  const parallel::DerivedPlan plan = parallel::derive_plan(s);
  report::RunReport r = systems::system_kind(s).simulate(s, plan, record_trace);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace dtsim::app
