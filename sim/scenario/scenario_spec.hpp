#pragma once
/// A scenario: which model on which hardware, with how many devices, under which parallel plan and schedule,
/// with which training settings. Parsed from scenarios/*.yaml (plus --set overrides) and checked as a whole.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/diagnostics.hpp"
#include "hardware/hardware_spec.hpp"
#include "model/model_spec.hpp"
#include "model/token_dispatcher.hpp"
#include "model/ub_method.hpp"
#include "stack/stack_spec.hpp"

namespace dtsim::scenario {

/// The schedule a scenario runs when it names none (the `schedule` key's default, docs/yaml-reference.md).
inline constexpr const char* kDefaultSchedule = "1f1b";
enum class Recompute { None, Selective, Full };
enum class Fidelity { Folded, Full };
/// Execution of a model on a wafer-scale system.
enum class WaferMode { Auto, WeightStreaming, LayerPipelined };

struct ParallelSpec {
  int64_t dp = 1, tp = 1, pp = 1;
  /// Context parallelism: each sequence split over cp ranks (ring attention passes keys and values around them).
  /// Megatron-LM places the cp ranks between tp and dp and reduces gradients over dp * cp ranks.
  int64_t cp = 1;
  int64_t dp_cp() const { return dp * cp; }  ///< ranks of one pipeline stage and TP rank that share the weights
  int64_t vpp = 1;                  ///< model chunks per pipeline stage (interleaved schedule)
  bool sp = false;                  ///< sequence parallelism
  bool dp_overlap = true;           ///< gradient all-reduce overlapped with backward, in buckets
  /// Pipeline sends and receives overlap computation (asynchronous). false: Megatron-LM's default, the
  /// stage posts its sends and receives between units in one batch and waits for all of them.
  bool pp_overlap = false;
  /// Without sequence parallelism: a column-parallel layer's input-gradient all-reduce runs beside its
  /// weight-gradient GEMM (Megatron-LM's async_tensor_model_parallel_allreduce, on by default since late 2021;
  /// Transformer Engine's Linear). false: after both GEMMs (Megatron-LM 2021, Megatron-DeepSpeed's copy of it).
  bool tp_async_allreduce = true;
  /// Under a schedule that pairs units (scenario::StageUnit::beside_previous: DualPipe's F&B, interleaved 1F1B's
  /// steady state): a forward and a backward chunk run as one pair, one's expert all-to-alls beside the other's
  /// compute (TP collectives stay in their chunk's compute), as DeepSeek-V3 runs them (arXiv 2412.19437, Sec.
  /// 3.2.1) and Megatron-Core's --overlap-moe-expert-parallel-comm. false: one after the other. Absent: the
  /// schedule's default (ScheduleDef::pairs_by_default). True under a schedule without pairs is refused.
  std::optional<bool> ep_overlap;
  bool pairs_units(bool schedule_default) const { return ep_overlap.value_or(schedule_default); }
  double dp_bucket_bytes = 25.0 * 1048576;  ///< PyTorch DDP's default bucket_cap_mb = 25
  /// Tensor-parallel communication overlapped with the GEMMs next to it (Megatron-LM's --tp-comm-overlap with
  /// Transformer Engine, off by default; needs sequence parallelism): an all-gather runs beside the kernels that
  /// consume it, a reduce-scatter beside the kernels that produce it, as if pipelined chunk by chunk.
  bool tp_overlap = false;
  /// With tp_overlap: the userbuffers settings of the row-parallel layers' forward reduce-scatters (`proj_fprop`,
  /// `fc2_fprop`): their method, SMs (num_sm) and whether the GEMM leaves them for its whole length (set_sm_margin).
  model::UbMethod ub_proj_fprop_method = model::UbMethod::Pipeline, ub_fc2_fprop_method = model::UbMethod::Pipeline;
  double ub_proj_fprop_sms = 16, ub_fc2_fprop_sms = 16;
  bool ub_proj_fprop_sm_margin = false, ub_fc2_fprop_sm_margin = false;
  /// ZeRO stage over the data-parallel group (Rajbhandari et al. 2019): 0 replicates everything; 1 shards the
  /// optimizer states (Megatron-LM's distributed optimizer); 2 also the gradients; 3 also the weights (FSDP).
  int zero = 0;
  /// ZeRO 1 and 2: the all-gather of the updated parameters runs during the next step's first forward, each layer
  /// waiting for its own parameters (Megatron-LM's --overlap-param-gather, off by default), instead of after the
  /// optimizer. Simulated in the steady state: the step starts with the previous step's gathers.
  bool param_gather_overlap = false;
  /// ZeRO 3: false keeps a layer's gathered parameters from its forward to its backward (FSDP2's
  /// reshard_after_forward=False): no backward gathers, the stage's gathered weights held.
  bool reshard_after_forward = true;
  /// ZeRO 2 and 3: gradients accumulated unsharded and reduce-scattered after the last microbatch only (FSDP2's
  /// set_requires_gradient_sync(False) on the others, as torch.distributed.pipelining calls it).
  bool defer_gradient_sync = false;
  /// Expert parallelism (mixture-of-experts models): the experts of each layer are split over ep ranks, carved out
  /// of the data-parallel ranks (with cp, of the dp * cp ranks, cp ranks first) as Megatron-Core does (ep divides
  /// dp * cp); tokens go to their experts by all-to-all.
  int64_t ep = 1;
  /// How the expert all-to-all sends the routed tokens (parallel.moe_dispatcher): each copy on its own, or a token
  /// once per destination node (DeepEP, HybridEP).
  model::TokenDispatcher moe_dispatcher = model::TokenDispatcher::AllToAll;
  /// Under the `alltoall` dispatcher: a CUDA graph covers the MoE preprocessing (Megatron-Core's cuda_graph_scope
  /// holds moe_preprocess), so the splits are copied to the host after the token permutation, with nothing queued
  /// behind the host's wait (parallel.moe_preprocess_graphed; replay/moe_host_sync.hpp).
  bool moe_preprocess_graphed = false;
  /// Expert tensor parallelism (Megatron-Core's --expert-tensor-parallel-size): the experts' matrices split over
  /// the tp ranks (0: tp, the default, Megatron-Core's as well) or whole on every rank (1). With 1, the
  /// expert-parallel group takes ep consecutive ranks of the stage, TP ranks first (tp divides ep), each rank
  /// dispatching its own sequence-parallel tokens, with no tensor-parallel collective around the experts; the
  /// ranks holding the same experts are the tp * dp * cp / ep others.
  int64_t expert_tp = 0;
  int64_t etp() const { return expert_tp > 0 ? expert_tp : tp; }
  /// Experts whole on every rank of a TP group of more than one: the expert groups span the TP ranks.
  bool experts_whole() const { return tp > 1 && etp() == 1; }
  /// Ranks of a stage over which the expert-parallel groups are carved: dp * cp, or tp * dp * cp with experts whole.
  int64_t expert_ranks() const { return dp_cp() * (tp / etp()); }
  /// Layers per pipeline stage (per virtual stage with vpp > 1, in chunk * pp + stage order); empty: an even
  /// split, which needs pp * vpp to divide the layers. See layer_partition.hpp.
  std::vector<int64_t> stage_layers;
};

struct TrainingSpec {
  int64_t global_batch = 1, micro_batch = 1, seq_len = 1;
  /// `micro_batch: auto` (the default on wafer-scale hardware): the largest micro batch that fits, as the Cerebras
  /// compiler picks it. Loading leaves micro_batch at 1; wafer::choose_micro_batch sets it (app::load_scenario).
  bool micro_batch_auto = false;
  /// Why micro_batch has its value when it was chosen automatically ("" when set in the scenario).
  std::string micro_batch_reason;
  std::string precision = "bf16";
  Recompute recompute = Recompute::None;
  /// Why recompute has its value when a system's compiler chose it (the scenario left it out), else "".
  std::string recompute_reason;
  /// Full recomputation of only the first N layers of each model chunk; the others keep all their activations
  /// (Megatron-LM's --recompute-method block --recompute-num-layers N, used to recompute no more than memory needs).
  /// 0: every layer (Megatron-LM's uniform method, one layer per group).
  int64_t recompute_layers = 0;
  /// training.saved_activations torchtitan-op: every layer keeps what torchtitan's per-op selective checkpointing
  /// saves (memory only; recompute and recompute_layers give its recomputed FLOPs). See parallel/memory.hpp.
  bool op_checkpoint = false;
  /// Weight-gradient GEMMs accumulate straight into the fp32 main gradients (Megatron-LM's
  /// --gradient-accumulation-fusion, the default since late 2021); false: PyTorch adds each microbatch's
  /// gradients into the stored ones with a separate kernel.
  bool grad_accumulation_fusion = true;
  /// Mixture of experts: tokens routed to the busiest expert relative to the mean (1: perfectly balanced).
  double expert_imbalance = 1.0;
  /// Mixture of experts: each expert takes at most this many times the mean tokens and drops the rest
  /// (Megatron-Core's --moe-expert-capacity-factor); 0: dropless, Megatron-Core's default.
  double expert_capacity_factor = 0;
  /// Tokens the busiest expert computes relative to the mean: the imbalance, capped by the capacity factor.
  double busiest_expert_load() const
  {
    return expert_capacity_factor > 0 && expert_capacity_factor < expert_imbalance ? expert_capacity_factor
                                                                                   : expert_imbalance;
  }
  /// Fused attention (FlashAttention, Dao et al. 2022): scores and softmax never reach memory; backward recomputes
  /// the scores. Off: Megatron-LM's unfused attention of 2021-2022 (separate GEMMs, softmax and dropout kernels).
  bool flash_attention = false;
  /// Transformer Engine's fp8 scaling recipe (fp8 training only); default: the stack's kernels.fp8_recipe.
  stack::Fp8Recipe fp8_recipe = stack::Fp8Recipe::Delayed;
  /// fp8 current scaling: the norm in front of QKV and fc1 takes its output's amax inside its kernel (Transformer
  /// Engine 2.8 on, unless NVTE_NORM_FWD_USE_CUDNN is set), so that tensor's cast reads it once.
  bool fp8_norm_amax = false;
  /// The kernels of the language-model loss; default: the stack's kernels.cross_entropy.
  stack::CrossEntropyKernel cross_entropy = stack::CrossEntropyKernel::Unfused;
  /// How Adam holds its states; default: the stack's memory.optimizer_state.
  stack::OptimizerState optimizer_state = stack::OptimizerState::Fp32;
  /// Low-precision linear layers only: Transformer Engine keeps their weights in the low precision alone (Megatron's
  /// --fp8-param-gather, NeMo's fp8_params), without a 16-bit copy beside them.
  bool fp8_params = false;
  /// Tokens of the whole training run (`training.tokens`); 0: not given, no time to train.
  double tokens = 0;
};

/// What a whole training run meets besides its steps (`resilience`); 0 leaves a value to the kind of system's
/// assumptions (report/time_to_train.hpp).
struct ResilienceSpec {
  double checkpoint_interval_s = 0;  ///< 0: Young-Daly
  bool checkpoint_async = false;
  double checkpoint_bandwidth = 0;   ///< storage write bandwidth per host (or system), bytes/s
  double restart_s = 0;
  double device_mtbf_s = 0, host_mtbf_s = 0;
};

/// Where the job's devices lie on the hardware (`placement`).
struct PlacementSpec {
  /// Nodes of each scale-up domain the job holds (`placement.segment`, Slurm's --segment); 0: not given, every node.
  /// Where given, the loader sets hardware.scale_up.nodes to it (what placement, collectives and reports use) and
  /// keeps the hardware file's count in domain_nodes.
  int64_t segment = 0;
  int64_t domain_nodes = 0;  ///< the hardware file's scale_up.nodes, where a segment is given
};

/// Per-device speed differences and per-kernel jitter (docs/variability.md); zeros: every device at its nominal
/// speed, every kernel at its timed length (the default).
struct VariabilitySpec {
  /// Coefficient of variation of a device's speed across the devices of the job, drawn once per device and step.
  double device_spread = 0;
  /// Coefficient of variation of one kernel's time, drawn per kernel.
  double kernel_jitter = 0;
  int64_t samples = 1;  ///< steps drawn; the report gives their mean and spread
  int64_t seed = 1;     ///< the draws are a function of (seed, sample, device, kernel) only
  bool on() const { return device_spread > 0 || kernel_jitter > 0; }
};

struct ScenarioSpec {
  std::string file;
  std::string name;
  std::string description;
  model::ModelSpec model;
  hardware::HardwareSpec hardware;
  /// The software that drives the hardware: the scenario's `stack`, else the hardware file's default_stack, else
  /// none (no corrections).
  stack::StackSpec stack;
  int64_t devices = 1;
  ParallelSpec parallel;
  /// The pipeline schedule: the name of its entry in the catalog (scenario/schedule_registry.hpp, checked by the
  /// YAML reader).
  std::string schedule = kDefaultSchedule;
  TrainingSpec training;
  ResilienceSpec resilience;
  PlacementSpec placement;
  Fidelity fidelity = Fidelity::Folded;
  VariabilitySpec variability;
  WaferMode wafer_mode = WaferMode::Auto;  ///< wafer-scale hardware only
  int64_t microbatches = 1;  ///< per pipeline per step: global_batch / (micro_batch * dp)
  std::map<std::string, Origin> where;  ///< origin of each scenario key, for cross-file messages
  /// Keys the scenario gives that change nothing in what it simulates, with where and why (warnings, printed by
  /// the commands: scenario/keys_without_effect.hpp).
  std::vector<Diagnostic> warnings;
};

const char* to_string(Recompute r);
/// "full", or "full (first 2 layers per chunk)" under training.recompute_layers.
std::string describe_recompute(const TrainingSpec& t);
const char* to_string(Fidelity f);
const char* to_string(WaferMode m);

/// Loads a scenario and the files it names, applies `overrides` ("key=value"; "model.KEY=value" and
/// "hardware.KEY=value" set keys of the model and hardware files it names), and checks everything; throws
/// ConfigError with every problem found.
ScenarioSpec load_scenario(const std::string& path, const std::vector<std::string>& overrides);

/// Sets the stack's efficiency factors of a loaded scenario, with what they act on (the links' effective bandwidth
/// carries the communication factor): `dtsim calibrate` simulates the same scenario under many factors.
void set_stack_factors(ScenarioSpec& s, const stack::Factors& f);

/// The cross-file checks of load_scenario on an already loaded scenario whose plan was changed in code (plan
/// enumeration): every problem found, none when the plan can run. Sets `microbatches`.
Diagnostics check_plan(ScenarioSpec& s);

}  // namespace dtsim::scenario
