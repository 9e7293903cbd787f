#include "scenario/moe_dispatch_wait.hpp"

#include "scenario/schedule_registry.hpp"

namespace dtsim::scenario {

MoeDispatchWait moe_dispatch_wait(const ScenarioSpec& s)
{
  if (!s.model.moe())
    return MoeDispatchWait::NoExperts;
  // The plan's comm.pairs (parallel/plan.cpp) is this same choice.
  if (s.parallel.pairs_units(schedule_def(s.schedule).pairs_by_default))
    return MoeDispatchWait::PairedUnits;
  if (s.stack.host.sync_resume_s <= 0)
    return MoeDispatchWait::NoSyncResume;
  return MoeDispatchWait::Priced;
}

}  // namespace dtsim::scenario
