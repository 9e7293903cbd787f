// A GPU cluster under hybrid data, tensor, pipeline, context and expert parallelism: the step program of every
// kernel and collective, ordered by the pipeline schedule and replayed on the cluster's platform.
#include "systems/gpu_cluster/gpu_cluster.hpp"

#include <memory>

#include "config/units.hpp"
#include "core/format_number.hpp"
#include "kernels/attention_kernel.hpp"
#include "kernels/compute_model.hpp"
#include "model/transformer.hpp"
#include "parallel/memory.hpp"
#include "parallel/plan_space.hpp"
#include "parallel/schedule.hpp"
#include "replay/shared_fabric.hpp"
#include "parallel/step_collectives.hpp"
#include "replay/step_program.hpp"
#include "report/explain.hpp"
#include "systems/gpu_cluster/gpu_hardware.hpp"
#include "systems/gpu_cluster/gpu_step.hpp"
#include "systems/gpu_cluster/step_bound.hpp"

namespace dtsim::systems {

namespace {

class GpuCluster : public SystemKind {
 public:
  const char* name() const override { return "gpu-cluster"; }

  void read_sections(config::MapReader& root, hardware::HardwareSpec& hw) const override
  {
    read_gpu_hardware(root, hw);
  }

  void check(hardware::HardwareSpec& hw, const hardware::HardwareSpec& file, Diagnostics& diag) const override
  {
    check_gpu_hardware(hw, file, diag);
  }

  std::vector<config::KeyGroup> key_groups() const override { return gpu_hardware_key_groups(); }
  nlohmann::ordered_json sections_record(const hardware::HardwareSpec& hw) const override
  {
    return gpu_hardware_record(hw);
  }
  std::string key_doc() const override
  {
    return "GPUs in nodes on a switched fabric. `node.nvlink` and `network.nic` are links with the same keys; a NIC's "
           "latency is end to end across the fabric. A node is its own NVLink domain unless a `scale_up` section "
           "says how many nodes share one (a GB200 NVL72 rack: `scale_up.nodes: 18` of `node.devices: 4`); the "
           "domain's NVLink (`nvlink`, `nvswitch_generation`, `nvls`, `topology`) is then given there and not in "
           "`node`. Devices of one domain talk over NVLink, NCCL's NVLS included; others through their node's NICs. "
           "A domain without a switch (`topology: full-mesh`, AMD's xGMI) gives `nvlink` as the link between each "
           "pair of its devices.";
  }

  void check_plan(const scenario::ScenarioSpec& s, const scenario::KeyOrigin& at, Diagnostics& diag) const override
  {
    if (s.where.count("wafer"))
      diag.add(at("wafer"), "wafer",
               "the wafer section applies to wafer-scale hardware only; " + s.hardware.file + " is a GPU cluster");
    // Fused attention runs at the figures the hardware file publishes for its kernel; FlashAttention-2's are the
    // least it needs (the kernel every other gives way to). No figures are taken from another device.
    if (s.training.flash_attention) {
      const auto kernel = kernels::attention_kernel_for(s.hardware.device, s.stack.attention, s.stack.attention_given);
      if (!kernels::has_attention_figures(s.hardware.device, kernel))
        diag.add({s.hardware.file, 0, 0},
                 std::string("device.efficiency.attention.") + kernels::attention_figures_key(kernel),
                 "expected the published throughput of the fused attention kernel on " + s.hardware.device.name +
                     " (training.flash_attention is true), found none in " + s.hardware.file);
    }
    // Low-precision GEMMs run on their own measured efficiency curve: none is borrowed from another precision
    // (fp8's from bf16's would time them 13% faster on B200, Llama 3 70B on 64: 4.46 s against 5.15 s).
    const std::string& precision = s.training.precision;
    const bool has_curve = precision == "fp8" ? s.hardware.device.has_gemm_fp8
                                              : s.hardware.device.gemm_block_scaled.count(precision) > 0;
    if ((precision == "fp8" || precision == "mxfp8" || precision == "nvfp4") && s.hardware.peak_flops(precision) > 0 &&
        !has_curve)
      diag.add({s.hardware.file, 0, 0}, "device.efficiency.gemm_" + precision,
               "expected the efficiency curve of " + precision + " GEMMs on " + s.hardware.device.name +
                   " (training.precision is " + precision + "), found none in " + s.hardware.file);
    if (s.parallel.tp_overlap && s.hardware.device.sm_count == 0)
      diag.add(at("parallel.tp_overlap"), "parallel.tp_overlap",
               "expected device.sm_count in " + s.hardware.file +
                   ": the overlapped communication kernels take streaming multiprocessors from the GEMMs beside them");
    // A userbuffers reduce-scatter that took every SM would leave its GEMM none to run on.
    const int64_t sms = s.hardware.device.sm_count;
    for (const auto& [key, taken] : {std::pair{"parallel.ub_proj_fprop_sms", s.parallel.ub_proj_fprop_sms},
                                     std::pair{"parallel.ub_fc2_fprop_sms", s.parallel.ub_fc2_fprop_sms}})
      if (s.parallel.tp_overlap && sms > 0 && taken >= double(sms))
        diag.add(at(key), key,
                 "expected fewer SMs than the device's " + std::to_string(sms) + " (device.sm_count in " +
                     s.hardware.file + "): the GEMM beside the reduce-scatter runs on the others, got " +
                     format_number("%g", taken));
  }

  std::string why_no_stack(const scenario::ScenarioSpec&) const override { return ""; }

  // The framework's micro batch is the scenario's: it must be given, as an integer.
  void take_micro_batch(scenario::ScenarioSpec& s, const scenario::MicroBatchGiven& given,
                        Diagnostics& diag) const override
  {
    if (given.is_auto)
      diag.add(given.where, "training.micro_batch",
               "expected an integer >= 1 on a GPU cluster (" + s.hardware.file +
                   "): auto, the largest micro batch that fits, is chosen on wafer-scale hardware only, got auto");
    else if (!given.given && given.section_read)
      diag.add(given.where, "training.micro_batch", "missing required key 'micro_batch' (expected an integer >= 1)");
  }

  // Megatron-LM and the frameworks built on it pad the vocabulary (tokenizer.py, _vocab_size_with_padding).
  bool pads_vocabulary() const override { return true; }

  // Every scenario key is read on a GPU cluster (training.fp8_recipe under another precision than fp8 aside, which
  // the loader itself warns about).
  std::vector<scenario::UnreadKey> unread_keys(const scenario::ScenarioSpec&) const override { return {}; }

  // Every choice is the scenario's or its stack's (the reader fills them in): nothing left to a compiler.
  void complete(scenario::ScenarioSpec&) const override {}

  const report::SystemSections& sections() const override { return gpu_cluster_sections(); }

  std::string count_devices(int64_t n) const override { return std::to_string(n) + (n == 1 ? " GPU" : " GPUs"); }

  void input_rows(const scenario::ScenarioSpec& s, const InputRow& row) const override
  {
    row("hardware", s.hardware.name);
    row("devices", std::to_string(s.devices) + " x " + s.hardware.device.name);
    row("plan", "tp " + std::to_string(s.parallel.tp) + ", pp " + std::to_string(s.parallel.pp) + ", dp " +
                    std::to_string(s.parallel.dp) + ", " + s.schedule +
                    (s.parallel.vpp > 1 ? " (" + std::to_string(s.parallel.vpp) + " chunks)" : "") +
                    (s.parallel.sp ? ", sequence parallel" : ""));
  }

  double lower_bound_step_s(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan) const override
  {
    return step_time_lower_bound(s, plan, prepare_gpu_step(s, plan, replay::StepLabels::Skipped));
  }

  std::string why_no_plan_search() const override { return ""; }
  std::string why_no_stack_calibration() const override { return ""; }
  std::string why_no_shared_fabric(const scenario::ScenarioSpec&) const override { return ""; }

  // Each job's plan, step program and schedule, then their steps together on one platform.
  std::vector<replay::SharedJobResult> replay_shared_fabric(const std::vector<FabricJob>& jobs,
                                                            int64_t min_steps) const override
  {
    std::vector<parallel::DerivedPlan> plans;
    plans.reserve(jobs.size());
    std::vector<GpuStep> steps;
    steps.reserve(jobs.size());
    std::vector<replay::SharedJob> shared;
    for (const FabricJob& job : jobs) {
      plans.push_back(parallel::derive_plan(*job.spec));
      steps.push_back(prepare_gpu_step(*job.spec, plans.back()));
      shared.push_back({job.spec, &plans.back(), steps.back().program.get(), &steps.back().schedule, job.placement,
                        job.start_s});
    }
    return replay::run_shared_fabric(shared, min_steps);
  }

  // Parameters and the memory of every stage; why_not_fitting says why the plan does not fit, if it does not.
  report::RunReport check_fit(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan) const override
  {
    report::RunReport r;
    r.scenario = &s;
    r.sections = &gpu_cluster_sections();
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
    replay::add_step_collectives(r.replay, parallel::step_collectives(s, plan).total_s());
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

  std::string describe_plan(const scenario::ScenarioSpec& s) const override
  {
    return parallel::describe_plan(s, parallel::RecomputeWord::Labelled);
  }

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

const SystemKind& gpu_cluster()
{
  static const GpuCluster kind;
  return kind;
}

}  // namespace dtsim::systems
