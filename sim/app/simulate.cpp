#include "app/simulate.hpp"

#include <chrono>

#include "app/system_backend.hpp"
#include "parallel/plan.hpp"

namespace dtsim::app {

report::RunReport check_fit(const scenario::ScenarioSpec& s)
{
  return backend_for(s).check_fit(s, parallel::derive_plan(s));
}

report::RunReport simulate(const scenario::ScenarioSpec& s, bool record_trace)
{
  const auto t0 = std::chrono::steady_clock::now();
  const parallel::DerivedPlan plan = parallel::derive_plan(s);
  report::RunReport r = backend_for(s).simulate(s, plan, record_trace);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace dtsim::app
