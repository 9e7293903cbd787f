#include "app/simulate.hpp"

#include <chrono>
#include <cstdio>

#include "hardware/compute_model.hpp"
#include "model/transformer.hpp"
#include "parallel/plan.hpp"
#include "parallel/schedule.hpp"
#include "replay/step_program.hpp"
#include "app/child_process.hpp"
#include "config/units.hpp"
#include "wafer/wafer_replay.hpp"

namespace dtsim::app {

namespace {

using scenario::WaferMode;

// The stack's fixed time per step comes after the replayed step, on every device.
void add_stack_overhead(replay::ReplayResult& r, double seconds)
{
  if (seconds <= 0)
    return;
  r.step_time_s += seconds;
  r.average.stack_overhead_s += seconds;
  for (auto& b : r.per_stage)
    b.stack_overhead_s += seconds;
}

// Fills the memory part of a wafer report for one mode.
void set_wafer_memory(report::RunReport& r, const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan,
                      const model::Transformer& t, WaferMode mode)
{
  r.wafer_mode = mode;
  r.wafer_memory = wafer::wafer_memory(s, plan, t, mode);
  parallel::StageMemory sm;
  sm.params = t.total_params(plan.shape.seq);
  sm.weights_bytes = r.wafer_memory.sram_weights;
  sm.activations_bytes = r.wafer_memory.sram_activations;
  sm.microbatches_in_flight = 1;
  r.memory.stages = {sm};
  r.memory.capacity_bytes = r.wafer_memory.sram_capacity;
  r.memory.peak_stage = 0;
  r.why_not_fitting = r.wafer_memory.why_not();
}

// A wafer-scale system up to the simulation: FLOPs, and the memory of the mode to simulate (under auto, of the
// first mode that fits, weight streaming first); why_not_fitting says why when no mode fits.
report::RunReport wafer_fit(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan,
                            const model::Transformer& t, const wafer::WaferProgram& program)
{
  report::RunReport r;
  r.scenario = &s;
  r.wafer = true;
  r.total_params = t.total_params(plan.shape.seq);
  r.model_flops = program.model_flops;
  r.hardware_flops = program.hardware_flops;
  if (s.wafer_mode != WaferMode::Auto) {
    r.wafer_mode_reason = "set in the scenario";
    set_wafer_memory(r, s, plan, t, s.wafer_mode);
    return r;
  }
  std::vector<WaferMode> fitting;
  std::string why;
  for (WaferMode m : {WaferMode::WeightStreaming, WaferMode::LayerPipelined}) {
    auto mem = wafer::wafer_memory(s, plan, t, m);
    if (mem.fits())
      fitting.push_back(m);
    else
      why += std::string(why.empty() ? "" : "; ") + scenario::to_string(m) + " does not fit (" + mem.why_not() + ")";
  }
  if (fitting.empty()) {
    set_wafer_memory(r, s, plan, t, WaferMode::WeightStreaming);
    r.wafer_mode_reason = "auto: " + why;
    r.why_not_fitting = why;
    return r;
  }
  set_wafer_memory(r, s, plan, t, fitting.front());
  r.wafer_mode_reason = fitting.size() == 2 ? "auto: both modes fit" : "auto: the only mode that fits; " + why;
  return r;
}

report::RunReport simulate_wafer(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan,
                                 bool record_trace)
{
  model::Transformer t(s.model);
  auto program = wafer::build_wafer_program(s, plan, t);
  report::RunReport r = wafer_fit(s, plan, t, program);
  if (!r.why_not_fitting.empty())
    return r;
  WaferMode mode = r.wafer_mode;
  if (s.wafer_mode == WaferMode::Auto && wafer::wafer_memory(s, plan, t, WaferMode::LayerPipelined).fits() &&
      wafer::wafer_memory(s, plan, t, WaferMode::WeightStreaming).fits()) {
    // Both modes fit: each is simulated in a child process and the faster one wins.
    const std::vector<WaferMode> both{WaferMode::WeightStreaming, WaferMode::LayerPipelined};
    std::vector<double> times;
    for (WaferMode m : both) {
      auto res = run_in_child([&]() {
        return std::vector<double>{wafer::run_wafer_replay(s, program, m, false).step_time_s};
      });
      times.push_back(res ? res->front() : 1e300);
    }
    mode = times[1] < times[0] ? both[1] : both[0];
    char buf[256];
    std::snprintf(buf, sizeof buf, "auto: both modes fit; weight-streaming %.4g s, layer-pipelined %.4g s per step",
                  times[0], times[1]);
    r.wafer_mode_reason = buf;
    set_wafer_memory(r, s, plan, t, mode);
  }
  r.replay = wafer::run_wafer_replay(s, program, mode, record_trace);
  r.simulated = true;
  return r;
}

// A GPU cluster up to the simulation: parameters and the memory of every stage.
report::RunReport gpu_fit(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan,
                          const model::Transformer& t)
{
  report::RunReport r;
  r.scenario = &s;
  r.total_params = t.total_params(plan.shape.seq);
  r.memory = parallel::estimate_memory(s, plan, t);
  if (!r.memory.fits())
    r.why_not_fitting = "peak " + config::format_quantity(r.memory.peak_bytes(), config::Dimension::Bytes) +
                        " on stage " + std::to_string(r.memory.peak_stage) + " of " +
                        config::format_quantity(r.memory.usable_bytes(), config::Dimension::Bytes) +
                        (r.memory.allocator_reserve_bytes > 0 ? " usable" : "");
  return r;
}

}  // namespace

report::RunReport check_fit(const scenario::ScenarioSpec& s)
{
  const parallel::DerivedPlan plan = parallel::derive_plan(s);
  model::Transformer t(s.model);
  if (s.hardware.wafer_scale)
    return wafer_fit(s, plan, t, wafer::build_wafer_program(s, plan, t));
  return gpu_fit(s, plan, t);
}

report::RunReport simulate(const scenario::ScenarioSpec& s, bool record_trace)
{
  auto t0 = std::chrono::steady_clock::now();
  const parallel::DerivedPlan plan = parallel::derive_plan(s);
  if (s.hardware.wafer_scale) {
    report::RunReport r = simulate_wafer(s, plan, record_trace);
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  }
  model::Transformer t(s.model);
  report::RunReport r = gpu_fit(s, plan, t);
  if (!r.why_not_fitting.empty())
    return r;
  hardware::ComputeModel compute(s.hardware.device, plan.precision.name, s.stack);
  auto program = std::make_shared<const replay::StepProgram>(replay::build_step_program(s, plan, t, compute));
  r.program = program;
  r.model_flops = program->model_flops;
  r.hardware_flops = program->hardware_flops;
  auto schedule = parallel::build_schedule(s.schedule, plan.groups.pp, plan.groups.vpp, s.microbatches);
  r.replay = replay::run_replay(s, *program, schedule, record_trace);
  add_stack_overhead(r.replay, s.stack.factors.step_overhead_s);
  r.simulated = true;
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace dtsim::app
