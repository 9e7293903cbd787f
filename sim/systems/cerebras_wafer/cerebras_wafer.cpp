// A wafer-scale system (Cerebras CS-2 class): weight streaming from MemoryX through SwarmX, or the whole model
// resident on the wafer (layer pipelined); auto keeps the modes that fit and simulates the faster. The physics is in
// sim/wafer/ (wafer_program, wafer_platform, weight_streaming, layer_pipeline); this file puts it behind the
// SystemKind interface.
#include "systems/cerebras_wafer/cerebras_wafer.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <ostream>

#include "core/child_process.hpp"
#include "core/diagnostics.hpp"
#include "model/transformer.hpp"
#include "systems/cerebras_wafer/wafer_hardware.hpp"
#include "systems/cerebras_wafer/wafer_run.hpp"
#include "systems/cerebras_wafer/micro_batch.hpp"
#include "systems/cerebras_wafer/recompute_choice.hpp"
#include "systems/cerebras_wafer/wafer_interval.hpp"
#include "systems/cerebras_wafer/wafer_program.hpp"
#include "systems/cerebras_wafer/wafer_replay.hpp"

namespace dtsim::systems {

namespace {

using scenario::WaferMode;

WaferRun& wafer_part(report::RunReport& r) { return static_cast<WaferRun&>(*r.detail); }

// Fills the memory part of a wafer report for one mode.
void set_wafer_memory(report::RunReport& r, const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan,
                      const model::Transformer& t, WaferMode mode)
{
  WaferRun& w = wafer_part(r);
  w.mode = mode;
  w.memory = wafer::wafer_memory(s, plan, t, mode);
  parallel::StageMemory sm;
  sm.params = t.total_params(plan.shape.seq);
  sm.weights_bytes = w.memory.sram_weights;
  sm.activations_bytes = w.memory.sram_activations;
  sm.microbatches_in_flight = 1;
  r.memory.stages = {sm};
  r.memory.capacity_bytes = w.memory.sram_capacity;
  r.memory.peak_stage = 0;
  r.why_not_fitting = w.memory.why_not();
}

// A wafer-scale system up to the simulation: FLOPs, and the memory of the mode to simulate (under auto, of the
// first mode that fits, weight streaming first); why_not_fitting says why when no mode fits.
report::RunReport wafer_fit(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan,
                            const model::Transformer& t, const wafer::WaferProgram& program)
{
  report::RunReport r;
  r.scenario = &s;
  r.sections = &cerebras_wafer_sections();
  r.detail = std::make_shared<WaferRun>();
  r.total_params = t.total_params(plan.shape.seq);
  r.model_flops = program.model_flops;
  r.hardware_flops = program.hardware_flops;
  if (s.wafer_mode != WaferMode::Auto) {
    wafer_part(r).mode_reason = "set in the scenario";
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
    wafer_part(r).mode_reason = "auto: " + why;
    r.why_not_fitting = why;
    return r;
  }
  set_wafer_memory(r, s, plan, t, fitting.front());
  wafer_part(r).mode_reason = fitting.size() == 2 ? "auto: both modes fit" : "auto: the only mode that fits; " + why;
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
  WaferMode mode = wafer_part(r).mode;
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
    wafer_part(r).mode_reason = buf;
    set_wafer_memory(r, s, plan, t, mode);
  }
  r.replay = wafer::run_wafer_replay(s, program, mode, record_trace);
  r.simulated = true;
  return r;
}

// Wafer-scale systems run whole units (embedding, layers, head) on the whole wafer, one pass at a time.
void print_wafer_explain(std::ostream& out, const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan)
{
  model::Transformer t(s.model);
  auto p = wafer::build_wafer_program(s, plan, t);
  out << "Units of one pass of " << p.pass_batch << " samples on one " << wafer_hardware(s.hardware).wafer.name << " ("
      << s.model.name << ", sequence " << plan.shape.seq << ", " << plan.precision.name << ", GEMMs at up to "
      << wafer_hardware(s.hardware).wafer.gemm_max_efficiency * 100 << "% of peak, half of it at "
      << wafer_hardware(s.hardware).wafer.gemm_half_length << " reduction elements per core)\n";
  // The unit column as wide as its longest label, so every row keeps its columns.
  int label_w = int(std::strlen("unit"));
  for (const auto& u : p.units)
    label_w = std::max(label_w, int(u.label.size()));
  char line[512];
  std::snprintf(line, sizeof line, "  %-*s %10s %12s %10s %10s %12s %12s\n", label_w, "unit", "params (M)",
                "weights (MB)", "fwd (ms)", "bwd (ms)", "recomp (ms)", "out (MB)");
  out << line;
  double fwd = 0, bwd = 0, rec = 0;
  for (size_t i = 0; i < p.units.size(); ++i) {
    const auto& u = p.units[i];
    fwd += u.fwd_s;
    bwd += u.bwd_s;
    rec += u.recompute_s;
    if (i > 2 && i + 1 < p.units.size())  // the layers are all alike: show the first two
      continue;
    std::snprintf(line, sizeof line, "  %-*s %10.2f %12.2f %10.3f %10.3f %12.3f %12.2f\n", label_w, u.label.c_str(),
                  u.params / 1e6, u.weight_bytes / 1e6, u.fwd_s * 1e3, u.bwd_s * 1e3, u.recompute_s * 1e3,
                  u.out_bytes / 1e6);
    out << line;
    if (i == 2 && p.units.size() > 4)
      out << "  ...\n";
  }
  std::snprintf(line, sizeof line,
                "\none pass: forward %.3f s, backward %.3f s, recomputation %.3f s (compute only); %lld passes per "
                "step on each of %lld systems\n",
                fwd, bwd, rec, (long long)p.passes, (long long)plan.groups.dp);
  out << line;
}

class CerebrasWafer : public SystemKind {
 public:
  const char* name() const override { return "cerebras-wafer"; }

  void read_sections(config::MapReader& root, hardware::HardwareSpec& hw) const override
  {
    read_wafer_hardware(root, hw);
  }

  void check(hardware::HardwareSpec&, const hardware::HardwareSpec&, Diagnostics&) const override {}

  std::vector<config::KeyGroup> key_groups() const override { return wafer_hardware_key_groups(); }
  nlohmann::ordered_json sections_record(const hardware::HardwareSpec& hw) const override
  {
    return wafer_hardware_record(wafer_hardware(hw));
  }
  std::string key_doc() const override
  {
    return "Cerebras wafer-scale systems (hardware/cerebras-*.yaml): the wafer, its weight store (MemoryX) and its "
           "broadcast/reduce tree (SwarmX). A step time has its 90% interval where " +
           std::to_string(wafer::kIntervalMinRuns) + " or more held-out errors are given "
           "(`wafer.calibration.heldout_errors`).";
  }

  // Several wafer-scale systems are purely data parallel through SwarmX: one model replica per system.
  void check_plan(const scenario::ScenarioSpec& s, const scenario::KeyOrigin& at, Diagnostics& diag) const override
  {
    const auto& p = s.parallel;
    for (const auto& [key, v] : {std::pair<const char*, int64_t>{"parallel.tp", p.tp}, {"parallel.pp", p.pp},
                                 {"parallel.vpp", p.vpp}, {"parallel.ep", p.ep}, {"parallel.cp", p.cp}})
      if (v != 1)
        diag.add(at(key), key,
                 std::string("expected 1 on wafer-scale hardware (") + s.hardware.file +
                     "): several systems are purely data parallel through SwarmX, got " + std::to_string(v));
    if (p.sp)
      diag.add(at("parallel.sp"), "parallel.sp", "expected false on wafer-scale hardware, got true");
    if (s.variability.on() || s.variability.samples > 1)
      diag.add(at("variability"), "variability",
               "expected no variability section on wafer-scale hardware (" + s.hardware.file +
                   "): per-device speed differences and kernel jitter are drawn by GPU clusters' replay only");
    if (p.zero != 0)
      diag.add(at("parallel.zero"), "parallel.zero",
               "expected 0 on wafer-scale hardware: weights and optimizer states live in MemoryX, got " +
                   std::to_string(p.zero));
    // The Cerebras compiler recomputes every layer or none (training.recompute, or its own choice where the key is
    // left out): it offers no count of recomputed layers and no per-op checkpointing (../shared/reference/
    // cerebras.md: no user-facing switch for activation checkpointing). Refused whether or not training.recompute
    // is given, rather than simulated under the compiler's name.
    if (s.training.recompute_layers > 0)
      diag.add(at("training.recompute_layers"), "training.recompute_layers",
               "expected no training.recompute_layers on wafer-scale hardware (" + s.hardware.file +
                   "): the Cerebras compiler recomputes every layer or none; leave training.recompute out for its "
                   "choice, got recompute_layers " + std::to_string(s.training.recompute_layers));
    if (s.training.op_checkpoint)
      diag.add(at("training.saved_activations"), "training.saved_activations",
               "expected layer on wafer-scale hardware (" + s.hardware.file +
                   "): torchtitan's per-op checkpointing is GPU software, got torchtitan-op");
  }

  std::string why_no_stack(const scenario::ScenarioSpec& s) const override
  {
    return "a software stack describes GPU software; wafer-scale hardware (" + s.hardware.file +
           ") takes its calibration from wafer.core_gemm";
  }

  // Left out or `auto`, the micro batch is the Cerebras compiler's: the largest that fits (complete()). Left out,
  // the recomputation is the compiler's too (wafer::compiler_recompute); a recomputation the Cerebras stack does
  // not offer is an input error.
  void take_micro_batch(scenario::ScenarioSpec& s, const scenario::MicroBatchGiven& given,
                        Diagnostics& diag) const override
  {
    s.training.micro_batch_auto = given.is_auto || !given.given;
    if (!given.recompute_given) {
      s.training.recompute = wafer::compiler_recompute(s);
      s.training.recompute_reason = wafer::compiler_recompute_reason(s);
      return;
    }
    if (const std::string why = wafer::why_recompute_not_offered(s); !why.empty())
      diag.add(given.recompute_where, "training.recompute", why);
  }

  // The Cerebras model zoo keeps the vocabulary as the model gives it.
  bool pads_vocabulary() const override { return false; }

  // GPU framework choices the wafer's model does not read (each checked: gpt-j-6b-2x-cs2.yaml's JSON record is the
  // same, byte for byte, with the key at either value).
  std::vector<scenario::UnreadKey> unread_keys(const scenario::ScenarioSpec& s) const override
  {
    const std::string on = "on wafer-scale hardware (" + s.hardware.file + ")";
    const std::string gradients = on + " each unit's gradients stream out as backward runs and are summed up the "
                                       "SwarmX tree (docs/wafer.md): there are no gradient buckets to overlap or size";
    return {
        {"training.flash_attention", on + " the Cerebras compiler lays out attention itself and whole attention "
                                          "scores are never held (docs/wafer.md, Memory); GPU attention kernels "
                                          "are not read"},
        {"training.cross_entropy", on + " the Cerebras compiler lays out the loss itself, block by block as the "
                                        "logits flow, never holding them whole (docs/wafer.md, Memory): GPU loss "
                                        "kernels are not read"},
        {"placement.segment", on + " a wafer-scale system has no NVLink domain to hold part of"},
        {"training.grad_accumulation_fusion", on + " Megatron-LM's fused weight-gradient GEMMs are a GPU kernel "
                                                   "choice, not read"},
        {"training.optimizer_state", on + " MemoryX holds 16-bit weights and gradients and fp32 Adam states, 16 "
                                          "bytes per parameter, and runs the optimizer (docs/wafer.md, Memory)"},
        {"parallel.dp_overlap", gradients},
        {"parallel.dp_bucket", gradients},
        {"parallel.pp_overlap", on + " pp is 1: there are no pipeline sends"},
        {"parallel.tp_async_allreduce", on + " tp is 1: there is no tensor-parallel all-reduce"},
        {"parallel.param_gather_overlap", on + " the weights stream from MemoryX (zero is 0): there is no "
                                               "parameter all-gather"},
    };
  }

  // The largest micro batch that fits, as the Cerebras compiler picks it, where the scenario leaves it to it.
  void complete(scenario::ScenarioSpec& s) const override { wafer::resolve_micro_batch(s); }

  const report::SystemSections& sections() const override { return cerebras_wafer_sections(); }

  std::string count_devices(int64_t n) const override { return std::to_string(n) + (n == 1 ? " system" : " systems"); }

  void input_rows(const scenario::ScenarioSpec& s, const InputRow& row) const override
  {
    row("hardware",
        s.hardware.name + " (" + std::to_string(s.devices) + " x " + wafer_hardware(s.hardware).wafer.name + ")");
  }

  // No plan search on a wafer (why_no_plan_search), so no bound to prune it with.
  double lower_bound_step_s(const scenario::ScenarioSpec&, const parallel::DerivedPlan&) const override { return 0; }

  std::string why_no_plan_search() const override
  {
    return "a wafer-scale system has no parallel plan to search (its systems are purely data parallel); use dtsim "
           "run or dtsim compare";
  }

  std::string why_no_stack_calibration() const override
  {
    return "calibrates GPU software stacks; wafer-scale systems are calibrated through wafer.core_gemm "
           "(scripts/calibrate_wafer.py)";
  }

  std::string why_no_shared_fabric(const scenario::ScenarioSpec& s) const override
  {
    return "expected a GPU cluster for a job on a shared fabric, got the wafer-scale system " + s.hardware.name +
           " (a wafer-scale system has no switch fabric to share)";
  }

  std::vector<replay::SharedJobResult> replay_shared_fabric(const std::vector<FabricJob>& jobs,
                                                            int64_t) const override
  {
    throw InternalError("dtsim run --shared-fabric: " + why_no_shared_fabric(*jobs.at(0).spec));
  }

  report::RunReport check_fit(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan) const override
  {
    model::Transformer t(s.model);
    return wafer_fit(s, plan, t, wafer::build_wafer_program(s, plan, t));
  }

  report::RunReport simulate(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan,
                             bool record_trace) const override
  {
    return simulate_wafer(s, plan, record_trace);
  }

  void explain(std::ostream& out, const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan) const override
  {
    print_wafer_explain(out, s, plan);
  }

  std::string summary(const scenario::ScenarioSpec& s) const override
  {
    return s.model.name + " on " + std::to_string(s.devices) + " x " + wafer_hardware(s.hardware).wafer.name + ", " +
           std::to_string(s.microbatches) + " passes of " + std::to_string(s.training.micro_batch) +
           " samples per system, mode " + scenario::to_string(s.wafer_mode) +
           (s.training.micro_batch_auto ? "; micro batch " + s.training.micro_batch_reason : "");
  }

  // Data parallelism over the systems, the micro batch and the recomputation; the execution mode is reported apart.
  std::string describe_plan(const scenario::ScenarioSpec& s) const override
  {
    return "dp " + std::to_string(s.parallel.dp) + " mb " + std::to_string(s.training.micro_batch) +
           (s.training.micro_batch_auto ? " (auto)" : "") + " recompute " + scenario::describe_recompute(s.training);
  }

  // From the wafer model's errors on the published runs it was not fitted on (hardware file, wafer.calibration),
  // as the GPU side's intervals come from a stack's held-out runs: once six or more back it.
  stack::StepInterval step_interval(const scenario::ScenarioSpec& s, double step_s) const override
  {
    return wafer::step_interval(wafer_hardware(s.hardware).wafer, step_s);
  }

  // Nothing to partition: the execution modes that fit are the plans.
  PlanChoices plan_choices(const scenario::ScenarioSpec& s) const override
  {
    PlanChoices c;
    const model::Transformer t(s.model);
    const parallel::DerivedPlan plan = parallel::derive_plan(s);
    for (WaferMode m : {WaferMode::WeightStreaming, WaferMode::LayerPipelined}) {
      ++c.candidates;
      if (!wafer::wafer_memory(s, plan, t, m).fits()) {
        ++c.not_fitting;
        continue;
      }
      scenario::ScenarioSpec x = s;
      x.wafer_mode = m;
      c.plans.push_back(x);
      c.names.push_back(scenario::to_string(m));
    }
    return c;
  }
};

}  // namespace

const SystemKind& cerebras_wafer()
{
  static const CerebrasWafer kind;
  return kind;
}

}  // namespace dtsim::systems
