#include "systems/gpu_cluster/gpu_step.hpp"

#include "kernels/compute_model.hpp"
#include "model/transformer.hpp"

namespace dtsim::systems {

GpuStep prepare_gpu_step(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan, replay::StepLabels labels)
{
  model::Transformer t(s.model);
  kernels::ComputeModel compute(s.hardware.device, plan.precision.name, s.stack);
  GpuStep step;
  step.program = std::make_shared<const replay::StepProgram>(replay::build_step_program(s, plan, t, compute, labels));
  // A schedule list-scheduled on its passes' times (ZB-V) orders by the program's compute times.
  step.schedule = parallel::build_schedule(s.schedule, plan.groups.pp, plan.groups.vpp, s.microbatches,
                                           replay::pass_times(*step.program));
  return step;
}

}  // namespace dtsim::systems
