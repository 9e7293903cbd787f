#pragma once
/// A software stack: what a given framework and version achieves on the hardware, as opposed to what the silicon
/// and the wires can do (hardware/*.yaml). Parsed from hardware/stacks/*.yaml. Physics first: the kernels, the
/// host overheads and the memory a framework holds are modelled from cited facts; the few `factors` then absorb
/// what remains, fitted by `dtsim calibrate` on a named minority of measured runs. Every default is "no
/// correction", so a scenario without a stack behaves as dtsim did before stacks existed.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/diagnostics.hpp"
#include "model/cross_entropy_kernel.hpp"
#include "stack/optimizer_state.hpp"

namespace dtsim::stack {

/// The attention kernel the stack runs when the scenario uses fused attention (training.flash_attention).
enum class AttentionKernel { Unfused, FlashAttention2, FlashAttention3, CuDnn };

/// Transformer Engine's fp8 scaling recipe: delayed scaling reuses the amax history of earlier steps; current
/// (per-tensor) scaling computes each tensor's amax before casting it, one more pass over the tensor.
enum class Fp8Recipe { Delayed, Current };

/// The loss's kernels (model/cross_entropy_kernel.hpp): one enum for the stack, the scenario and the model.
using CrossEntropyKernel = model::CrossEntropyKernel;

/// Host-side time per launch, per layer and per microbatch (Python, the framework's dispatcher, the CUDA driver).
/// A GPU stalls on it only when its kernels are shorter than the host takes to launch them.
struct HostOverheads {
  double launch_s = 0;          ///< host time to launch one kernel; floors each kernel's time
  double per_layer_s = 0;       ///< framework time per layer pass (module hooks, autograd bookkeeping)
  double per_microbatch_s = 0;  ///< framework time per microbatch (data loading, loss, schedule bookkeeping)
  /// Time from a host synchronisation's return to the start of the next kernel it launches (the host wakes, then
  /// dispatches one eager operator): the GPU idles for it after any point where the host waits on the GPU with
  /// nothing queued behind (Megatron-Core's alltoall token dispatcher, once per MoE layer forward).
  double sync_resume_s = 0;
  /// Host time per expert GEMM that a grouped linear layer issues one by one (Transformer Engine's GroupedLinear on
  /// a device without a single-launch grouped GEMM: a loop of cuBLASLt calls, model::Op::expert_gemms). Dropless
  /// MoE's per-expert shapes change every microbatch, so no CUDA graph holds these: it is charged with graphs too.
  double expert_gemm_s = 0;
};

/// Memory a framework holds beyond model states and activations.
struct FrameworkMemory {
  double cuda_context_bytes = 0;  ///< CUDA context and cuBLAS/cuDNN workspaces
  double nccl_buffer_bytes = 0;   ///< NCCL communicator buffers
  double fragmentation = 0;       ///< fraction of the device memory the caching allocator cannot hand out
  /// Gradients kept and reduced in fp32 (Megatron-LM's main_grad, --accumulate-allreduce-grads-in-fp32 is the
  /// default with bf16) rather than in the 16-bit training precision.
  bool fp32_gradients = false;
  /// How Adam holds its states (stack/optimizer_state.hpp): the default of the scenario's training.optimizer_state.
  OptimizerState optimizer_state = OptimizerState::Fp32;
  /// Low-precision linear layers keep no low-precision copy of weights or inputs between forward and backward: they
  /// save the 16-bit ones and cast again in backward (torchao's Float8Linear).
  bool fp8_saves_16bit = false;
  /// A pipeline stage keeps each microbatch's output tensor until that microbatch's backward
  /// (torch.distributed.pipelining), rather than freeing its data once sent (Megatron-LM).
  bool pipeline_keeps_stage_outputs = false;
  /// A pipeline stage allocates its activation and gradient receive buffers once per microbatch and keeps them
  /// across steps (torch.distributed.pipelining).
  bool pipeline_recv_buffers = false;
  /// The pipeline stage that computes the loss keeps every microbatch's output (the logits) until the step ends
  /// (torch.distributed.pipelining's output_chunks), rather than freeing it after its backward.
  bool pipeline_keeps_logits = false;
  /// A pipeline stage keeps the gradient of each microbatch's received input, made by its backward, until the next
  /// step begins (torch.distributed.pipelining before 2025-10: autograd writes it to the receive buffer's .grad, which
  /// only clear_runtime_states resets), rather than freeing it once sent.
  bool pipeline_keeps_input_grads = false;
  /// Every pipeline stage keeps each microbatch's output until the next step begins (torch.distributed.pipelining
  /// before 2025-05: output_chunks on every stage), not only until its backward.
  bool pipeline_keeps_outputs_to_step_end = false;
  /// The stage that computes the loss concatenates every microbatch's logits into one tensor when the step ends
  /// (torch.distributed.pipelining's step() return value), reserved as a segment of its own in the first step.
  bool pipeline_merges_outputs = false;
  /// FSDP2's per-layer buffers beside the gathered weights: a flat all-gather output cached in its own stream's pool,
  /// the layer's 16-bit unsharded gradients, the previous layer's reduce-scatter input.
  bool fsdp_layer_buffers = false;
  /// FSDP2's sharded gradients stay reserved in its reduce-scatter stream's pool between steps: counted at the peak
  /// also when their reduction waits for the last microbatch.
  bool fsdp_gradient_pool = false;
  /// PyTorch FSDP keeps the sharded parameters in fp32 alone (the master copy, counted with Adam's states) and casts
  /// them to the 16-bit param_dtype for each all-gather into buffers freed after it: no persistent 16-bit shard.
  bool fsdp_fp32_shard_only = false;
  /// Under sequence parallelism a column-parallel linear saves its input as gathered, whole on every tp rank (torch's
  /// DTensor tensor parallelism), rather than the rank's rows gathered again in backward (Megatron-LM).
  bool tp_saves_gathered_inputs = false;
  /// Bytes per logit held at the loss's peak, the vocabulary on one rank / split over the tp ranks (a
  /// vocabulary-parallel loss); 0: the 16-bit logits and two fp32 copies (activation bytes + 8).
  double loss_bytes_per_logit = 0, loss_parallel_bytes_per_logit = 0;
  /// Bytes per element of the final norm's input (the rank's tokens times the hidden width) that autograd keeps for
  /// the norm's backward, held with the loss's buffers (torchtitan's RMSNorm, eager: 6); 0: not counted.
  double final_norm_bytes_per_element = 0;
};

/// Defaults of the scenario's overlap switches (parallel.*) that the stack turns on or off when the scenario does
/// not set them.
struct OverlapDefaults {
  std::optional<bool> tp_overlap, dp_overlap, pp_overlap, param_gather_overlap, tp_async_allreduce;
  /// `overlap.ub_sm_margin`: the Transformer Engine version's default set_sm_margin of a `pipeline` userbuffers layer.
  std::optional<bool> ub_sm_margin;
  /// `overlap.pp_overlap_by_schedule`: the default of `parallel.pp_overlap` for the named schedule, before
  /// `pp_overlap` (a framework whose schedules differ in how they wait for their pipeline transfers).
  struct SchedulePpOverlap {
    std::string schedule;
    bool pp_overlap = false;
    Origin where;  ///< of the entry: the scenario reader checks the name against the schedules it knows
  };
  std::vector<SchedulePpOverlap> pp_overlap_by_schedule;
};

/// The efficiency factors: multipliers of the modelled speed (1 = no correction) and an additive per-step time.
struct Factors {
  double compute = 1.0;         ///< GEMM (and fused attention) throughput
  double memory = 1.0;          ///< memory-bound kernel throughput
  double communication = 1.0;   ///< achieved bandwidth of every collective and pipeline transfer
  double step_overhead_s = 0;   ///< time added once per step (optimizer bookkeeping, logging, synchronisation)
};

/// What `dtsim calibrate` recorded: on how many runs the factors were fitted and the relative errors (simulated /
/// measured - 1) of runs the fit did not see (leave-one-out, or named check runs). The interval of every step time
/// predicted with this stack comes from them.
struct Calibration {
  int64_t runs = 0;                       ///< runs the factors were fitted on; 0: never calibrated
  std::vector<double> heldout_errors;     ///< relative errors of runs not used in the fit
};

struct StackSpec {
  std::string file;  ///< empty: no stack (every correction at its default)
  /// Every key path the file writes ("factors.compute", and "factors" itself): what `dtsim stack` marks as given
  /// rather than "(default)" (config::YamlFile::key_paths).
  std::set<std::string> written_keys;
  std::string name;
  std::string framework, version;
  /// The NCCL release its runs used (stack key `nccl`), as NCCL_VERSION_CODE (2.23.4: 22304); 0: not published, or
  /// no stack (the algorithms of the releases before 2.23)
  int nccl_version = 0;
  AttentionKernel attention = AttentionKernel::Unfused;
  bool attention_given = false;  ///< the stack names a fused attention kernel: the scenario's default is fused
  Fp8Recipe fp8_recipe = Fp8Recipe::Delayed;
  CrossEntropyKernel cross_entropy = CrossEntropyKernel::Unfused;
  bool cuda_graphs = false;  ///< kernels replayed from CUDA graphs: no per-kernel host launch
  /// The reported loss all-reduced over the data-parallel group after every microbatch's forward on the last stage
  /// (Megatron-LM, NeMo, Megatron-Bridge, Megatron-DeepSpeed); false where the framework reduces it only on logging
  /// steps (torchtitan).
  bool loss_all_reduce_per_microbatch = true;
  /// Context parallelism as PyTorch's experimental _attention runs it under torch.compile (torchtitan, end of 2024):
  /// K, V all-gathered and waited for, one attention kernel per block, fp32 merges, dK, dV rotated in fp32
  /// (stack key `kernels.context_parallel: torch-allgather`); false: Megatron-LM's overlapped ring.
  bool context_parallel_allgather = false;
  /// parallel.tp_overlap as PyTorch's async tensor parallelism runs it (Inductor's micro-pipeline pass over symmetric
  /// memory; stack key `kernels.tp_overlap: torch-micro-pipeline`); false: Transformer Engine's userbuffers.
  bool tp_overlap_micro_pipeline = false;
  /// Userbuffers' ring-exchange all-gathers copy the rank's rows into the buffer first (stack key
  /// `kernels.ub_gather_copy`; Transformer Engine 2.x).
  bool ub_gather_copy = false;
  /// ZeRO 1 and 2 reduce each gradient bucket with an all-reduce and keep the rank's shard (DeepSpeed; stack key
  /// `kernels.zero_gradients: all-reduce`); false: a reduce-scatter.
  bool zero_gradients_all_reduce = false;
  /// Bytes the optimizer step moves per updated parameter (stack key `kernels.optimizer_step_bytes`); 0: Megatron-LM's
  /// (replay::kOptimizerBytesPerParam).
  double optimizer_step_bytes = 0;
  HostOverheads host;
  FrameworkMemory memory;
  OverlapDefaults overlap;
  Factors factors;
  Calibration calibration;
  /// collectives: {algorithm, protocol}: what the framework forces (e.g. NCCL_ALGO in its launcher); wins over
  /// the hardware file's.
  std::string collective_algorithm, collective_protocol;
  bool given() const { return !file.empty(); }
};

const char* to_string(AttentionKernel k);
const char* to_string(Fp8Recipe r);
const char* to_string(CrossEntropyKernel k);
/// The YAML names of the fp8 recipes and of the cross-entropy kernels, in enum order (stack and scenario keys).
const std::vector<std::string>& fp8_recipe_names();
const std::vector<std::string>& cross_entropy_names();
/// The recipe or kernel of a name from those lists (a name the YAML reader has already checked).
Fp8Recipe fp8_recipe_named(const std::string& name);
CrossEntropyKernel cross_entropy_named(const std::string& name);

/// Names of the factors that `dtsim calibrate --fit` takes, in the order it uses by default.
const std::vector<std::string>& factor_names();
/// The factor's value in `f` (by name, one of factor_names()), and a way to set it.
double factor_value(const Factors& f, const std::string& name);
void set_factor(Factors& f, const std::string& name, double value);

}  // namespace dtsim::stack
