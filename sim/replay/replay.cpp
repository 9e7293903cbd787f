#include "replay/replay.hpp"

#include "replay/driver.hpp"

namespace dtsim::replay {

Breakdown& Breakdown::operator+=(const Breakdown& o)
{
  compute_s += o.compute_s;
  recompute_s += o.recompute_s;
  exposed_tp_comm_s += o.exposed_tp_comm_s;
  exposed_pp_comm_s += o.exposed_pp_comm_s;
  exposed_dp_comm_s += o.exposed_dp_comm_s;
  exposed_ep_comm_s += o.exposed_ep_comm_s;
  exposed_cp_comm_s += o.exposed_cp_comm_s;
  bubble_s += o.bubble_s;
  optimizer_s += o.optimizer_s;
  exposed_weight_streaming_s += o.exposed_weight_streaming_s;
  exposed_fabric_s += o.exposed_fabric_s;
  stack_overhead_s += o.stack_overhead_s;
  step_collectives_s += o.step_collectives_s;
  return *this;
}

Breakdown& Breakdown::operator/=(double n)
{
  for (double* x : {&compute_s, &recompute_s, &exposed_tp_comm_s, &exposed_pp_comm_s, &exposed_dp_comm_s,
                    &exposed_ep_comm_s, &exposed_cp_comm_s, &bubble_s, &optimizer_s, &exposed_weight_streaming_s, &exposed_fabric_s,
                    &stack_overhead_s, &step_collectives_s})
    *x /= n;
  return *this;
}

void add_step_overhead(ReplayResult& r, double seconds)
{
  if (seconds <= 0)
    return;
  r.step_time_s += seconds;
  r.average.stack_overhead_s += seconds;
  for (auto& b : r.per_stage)
    b.stack_overhead_s += seconds;
}

void add_step_collectives(ReplayResult& r, double seconds)
{
  if (seconds <= 0)
    return;
  r.step_time_s += seconds;
  r.average.step_collectives_s += seconds;
  for (auto& b : r.per_stage)
    b.step_collectives_s += seconds;
}

ReplayResult run_replay(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan, const StepProgram& program,
                        const parallel::PipelineSchedule& schedule, bool record_trace)
{
  Activities acts;
  Driver driver(acts, s, plan, program, schedule, record_trace);
  acts.run([&]() { driver.start(); });
  if (!driver.all_done())
    throw InternalError("the step did not complete: the schedule deadlocked");
  return driver.finish();
}

}  // namespace dtsim::replay
