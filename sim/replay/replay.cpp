#include "replay/replay.hpp"

#include "replay/driver.hpp"

namespace dtsim::replay {

ReplayResult run_replay(const scenario::ScenarioSpec& s, const StepProgram& program,
                        const parallel::PipelineSchedule& schedule, bool record_trace)
{
  Activities acts;
  Driver driver(acts, s, program, schedule, record_trace);
  acts.run([&]() { driver.start(); });
  if (!driver.all_done())
    throw InternalError("the step did not complete: the schedule deadlocked");
  return driver.finish();
}

}  // namespace dtsim::replay
