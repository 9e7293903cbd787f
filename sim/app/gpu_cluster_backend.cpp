// A GPU cluster under hybrid data, tensor, pipeline, context and expert parallelism: the step program of every
// kernel and collective, ordered by the pipeline schedule and replayed on the cluster's platform.
#include <memory>

#include "app/gpu_step.hpp"
#include "app/system_backend.hpp"
#include "config/units.hpp"
#include "hardware/compute_model.hpp"
#include "model/transformer.hpp"
#include "parallel/memory.hpp"
#include "parallel/plan_space.hpp"
#include "parallel/schedule.hpp"
#include "replay/step_program.hpp"
#include "report/explain.hpp"

namespace dtsim::app {

namespace {

class GpuClusterBackend : public SystemBackend {
 public:
  // Parameters and the memory of every stage; why_not_fitting says why the plan does not fit, if it does not.
  report::RunReport check_fit(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan) const override
  {
    report::RunReport r;
    r.scenario = &s;
    model::Transformer t(s.model);
    r.total_params = t.total_params(plan.shape.seq);
    r.memory = parallel::estimate_memory(s, plan, t);
    if (!r.memory.fits())
      r.why_not_fitting = "peak " + config::format_quantity(r.memory.peak_bytes(), config::Dimension::Bytes) +
                          " on stage " + std::to_string(r.memory.peak_stage) + " of " +
                          config::format_quantity(r.memory.usable_bytes(), config::Dimension::Bytes) +
                          (r.memory.allocator_reserve_bytes > 0 ? " usable" : "");
    return r;
  }

  report::RunReport simulate(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan,
                             bool record_trace) const override
  {
    report::RunReport r = check_fit(s, plan);
    if (!r.why_not_fitting.empty())
      return r;
    const GpuStep step = prepare_gpu_step(s, plan);
    r.program = step.program;
    r.model_flops = step.program->model_flops;
    r.hardware_flops = step.program->hardware_flops;
    r.replay = replay::run_replay(s, plan, *step.program, step.schedule, record_trace);
    replay::add_step_overhead(r.replay, s.stack.factors.step_overhead_s);
    r.simulated = true;
    return r;
  }

  void explain(std::ostream& out, const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan) const override
  {
    report::print_explain(out, s, plan);
  }

  std::string summary(const scenario::ScenarioSpec& s) const override
  {
    return s.model.name + " on " + std::to_string(s.devices) + " x " + s.hardware.device.name + ", dp " +
           std::to_string(s.parallel.dp) + " tp " + std::to_string(s.parallel.tp) + " pp " +
           std::to_string(s.parallel.pp) + ", " + std::to_string(s.microbatches) + " microbatches per pipeline";
  }

  std::string describe_plan(const scenario::ScenarioSpec& s) const override { return parallel::describe_plan(s); }

  stack::StepInterval step_interval(const scenario::ScenarioSpec& s, double step_s) const override
  {
    return stack::step_interval(s.stack, step_s);
  }

  PlanChoices plan_choices(const scenario::ScenarioSpec& s) const override
  {
    auto space = parallel::enumerate_plans(s);
    PlanChoices c;
    c.candidates = space.candidates;
    c.invalid = space.invalid;
    c.not_fitting = space.not_fitting;
    c.plans = std::move(space.fitting);
    for (const auto& p : c.plans)
      c.names.push_back(parallel::describe_plan(p));
    return c;
  }
};

}  // namespace

const SystemBackend& gpu_cluster_backend()
{
  static const GpuClusterBackend backend;
  return backend;
}

}  // namespace dtsim::app
