#pragma once
/// What each pipeline stage runs, step by step, for one forward or backward unit of each of its model chunks:
/// compute steps (runs of kernels timed by the device model), tensor-parallel collectives, and the points where a
/// layer's gradients become ready for the data-parallel all-reduce. Built once per scenario, shared by every
/// microbatch; pure data, no SimGrid.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/compute_model.hpp"
#include "model/transformer.hpp"
#include "parallel/plan.hpp"
#include "scenario/scenario_spec.hpp"
#include "scenario/schedule_registry.hpp"

namespace dtsim::replay {

struct Step {
  /// ParamGather (ZeRO-3): the device needs the next parameters gathered over its data-parallel group.
  /// EpCollective: a mixture-of-experts token all-to-all over the expert-parallel group.
  /// CpRing: the context-parallel ring of keys and values over the cp group, beside the attention it feeds.
  enum class Kind { Compute, TpCollective, GradReady, ParamGather, EpCollective, CpRing };
  Kind kind = Kind::Compute;
  double seconds = 0;        ///< compute time (Compute)
  double flops = 0;          ///< hardware FLOPs of the step on one device (Compute)
  /// The relative spread of the run's time over one kernel's (Compute): sqrt(sum t_i^2) / sum t_i of its kernels'
  /// times t_i, the coefficient of variation of a sum of independent kernels of equal coefficient of variation.
  double jitter_weight = 1;
  bool recompute = false;    ///< re-running a forward for activation recomputation (Compute)
  bool accumulation = false; ///< adding a microbatch's gradients into the stored ones (Compute)
  model::TpCollective collective = model::TpCollective::None;
  double bytes = 0;          ///< collective tensor size (TpCollective, ParamGather)
  int grad_index = 0;        ///< position in the chunk's gradient list (GradReady)
  bool expert = false;       ///< ParamGather of expert parameters: over the expert-data-parallel group
  /// TpCollective issued asynchronously beside the next Compute step (model::Segment::beside_next).
  bool beside_next = false;
  /// CpRing the device waits for, beside no kernel (model::Segment::blocking).
  bool blocking = false;
  /// TpCollective run by the copy engines, taking no SMs from the kernels beside it (model::Segment::copy_engine).
  bool copy_engine = false;
  /// TpCollective overlapped chunk by chunk with the GEMM that produces it (model::Segment::ub; ub.chunks 0: not,
  /// its SMs Transformer Engine's defaults).
  model::UbPipelinedRs ub{};
  /// With ub.chunks: the time of the GEMM before it (the last kernel of the compute step it overlaps) on all SMs.
  /// Under ub.sm_margin it runs on the SMs the reduce-scatter leaves for its whole length; under a ring exchange its
  /// last chunk (1 / chunks of it) hides the last send.
  double ub_gemm_s = 0;
  std::string label;
};

/// Gradients of one chunk in the order backward produces them (output side first).
struct ChunkGradients {
  std::vector<double> bytes;  ///< gradient bytes per entry (a layer, the head or the embedding)
  /// Whether the entry is a layer's experts: reduced over the expert-data-parallel group (dp / ep ranks).
  std::vector<bool> expert;
  bool is_expert(size_t i) const { return i < expert.size() && expert[i]; }
  /// Bytes of the expert entries (`experts` true) or of the others.
  double sum(bool experts) const
  {
    double total = 0;
    for (size_t i = 0; i < bytes.size(); ++i)
      if (is_expert(i) == experts)
        total += bytes[i];
    return total;
  }
};

struct StepProgram {
  std::vector<std::vector<std::vector<Step>>> forward;   ///< [stage][chunk]
  std::vector<std::vector<std::vector<Step>>> backward;  ///< [stage][chunk]
  /// The first microbatch's backward: the same, less the gradient accumulation kernels (there is nothing to
  /// accumulate into yet).
  std::vector<std::vector<std::vector<Step>>> backward_first;  ///< [stage][chunk]
  /// The first microbatch's forward when it differs (parallel.param_gather_overlap: it waits for each layer's
  /// updated parameters); empty otherwise.
  std::vector<std::vector<std::vector<Step>>> forward_first;  ///< [stage][chunk]
  /// Zero-bubble schedules (scenario::BackwardPart): the backward's input part (B: its kernels but the weight
  /// gradients, its collectives, recomputation and ZeRO-3 gathers) and weight part (W: the weight-gradient GEMMs,
  /// the gradient accumulation and the points where gradients are ready), W of the first microbatch without the
  /// accumulation. Empty under other schedules.
  std::vector<std::vector<std::vector<Step>>> backward_input;         ///< [stage][chunk]
  std::vector<std::vector<std::vector<Step>>> backward_weight;        ///< [stage][chunk]
  std::vector<std::vector<std::vector<Step>>> backward_weight_first;  ///< [stage][chunk]
  std::vector<std::vector<ChunkGradients>> gradients;    ///< [stage][chunk]
  std::vector<double> optimizer_seconds;                 ///< [stage]
  /// ZeRO 1 and 2: after the optimizer, each rank all-gathers the updated 16-bit parameters of its stage over
  /// the data-parallel group (the whole tensor; each rank updated 1/dp of it). 0 otherwise.
  std::vector<double> param_allgather_bytes;             ///< [stage], non-expert parameters (dp group)
  std::vector<double> expert_allgather_bytes;            ///< [stage], expert parameters (expert-dp group)
  std::vector<double> stage_params;                      ///< [stage], per device
  /// Tied embeddings with pp > 1: the first and last stages both hold the word embeddings and all-reduce their
  /// gradients before the optimizer (Megatron-LM). 0 when there is nothing to synchronise.
  double embedding_sync_bytes = 0;
  double send_bytes = 0;         ///< activations (or their gradients) sent between stages per microbatch
  double model_flops = 0;        ///< whole step, all devices, recomputation not counted
  double hardware_flops = 0;     ///< whole step, all devices, recomputation counted
};

/// The steps of one unit (`part`: of a backward unit, see scenario::BackwardPart).
const std::vector<Step>& unit_steps(const StepProgram& p, int64_t stage, int64_t chunk, int64_t microbatch,
                                    bool backward, scenario::BackwardPart part = scenario::BackwardPart::Whole);

/// The compute seconds of one microbatch's forward, B and W of each chunk of each stage (collectives, which the
/// replay times, not counted): what a schedule list-scheduled on its passes' times orders by (ZB-V). Empty for a
/// program whose backward is not split.
scenario::PassTimes pass_times(const StepProgram& p);

/// Bytes moved per parameter by a mixed-precision optimizer step as Megatron-LM runs it, one memory-bound pass
/// per kernel: copy 16-bit gradients to fp32 main gradients (2 + 4), unscale and check for inf/nan (4 + 4),
/// gradient norm for clipping (4), fused Adam reading parameter, gradient, momentum and variance and writing
/// three of them back (16 + 12), copy fp32 main parameters to 16-bit parameters (4 + 2), zero the gradients (2).
constexpr double kOptimizerBytesPerParam = 6 + 8 + 4 + 28 + 6 + 2;

/// Whether a step program's steps get their labels (Step::label), which only traces read: a search's lower bounds,
/// which build one program per plan and read none, skip them (GPT-3 175B's full-space bounds 17.3 -> 15.9 s of CPU;
/// docs/performance.md). Every other field is the same either way.
enum class StepLabels { Made, Skipped };

/// `plan` is derive_plan(s).
StepProgram build_step_program(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan,
                               const model::Transformer& t, const kernels::ComputeModel& compute,
                               StepLabels labels = StepLabels::Made);

}  // namespace dtsim::replay
