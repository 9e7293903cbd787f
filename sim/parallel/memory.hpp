#pragma once
/// Memory per device, per pipeline stage: weights, gradients and mixed-precision Adam states (Rajbhandari et al.
/// 2019: 2 + 2 + 12 bytes per parameter), and the activations held in flight under the schedule, sequence
/// parallelism and recomputation (Korthikanti et al. 2022, Table 2). See ../shared/reference/formulas.md.
#include <cstdint>
#include <vector>

#include "model/transformer.hpp"
#include "parallel/plan.hpp"
#include "scenario/scenario_spec.hpp"

namespace dtsim::parallel {

struct StageMemory {
  int64_t stage = 0;
  double params = 0;  ///< parameters held by one device of this stage
  double weights_bytes = 0, gradients_bytes = 0, optimizer_bytes = 0, activations_bytes = 0;
  /// What the software stack holds besides: the CUDA context and the NCCL buffers of every communicator the rank
  /// joins (stack memory.cuda_context, memory.nccl_buffers; framework_memory_bytes()).
  double framework_bytes = 0;
  int64_t microbatches_in_flight = 0;  ///< (chunk-)microbatches whose activations are stored at the peak
  double total_bytes() const
  {
    return weights_bytes + gradients_bytes + optimizer_bytes + activations_bytes + framework_bytes;
  }
};

struct MemoryReport {
  std::vector<StageMemory> stages;
  double capacity_bytes = 0;
  /// Of the capacity, what the caching allocator cannot hand out (stack memory.fragmentation * capacity).
  double allocator_reserve_bytes = 0;
  int64_t communicators = 0;  ///< NCCL communicators one rank joins (the framework bytes count their buffers)
  int64_t peak_stage = 0;
  double peak_bytes() const { return stages.empty() ? 0.0 : stages[size_t(peak_stage)].total_bytes(); }
  double usable_bytes() const { return capacity_bytes - allocator_reserve_bytes; }
  bool fits() const { return peak_bytes() <= usable_bytes(); }
};

/// NCCL communicators a rank of `plan` joins: one per parallel group of more than one rank (tensor, context,
/// pipeline, data, expert and expert-data parallel). NCCL allocates each its own buffers, which grow with its
/// channels, not with the group's size beyond two nodes (NVIDIA/nccl#986).
int64_t communicators(const DerivedPlan& plan);

/// Bytes the stack holds on every device outside model states and activations: its CUDA context plus the NCCL
/// buffers of each communicator.
double framework_memory_bytes(const stack::StackSpec& st, const DerivedPlan& plan);

/// Activation bytes one layer stores for one microbatch of shape `sh` on one TP rank (no recomputation, or
/// selective); `dense`: one of the dense first layers of a model with experts.
double layer_activation_bytes(const model::ModelSpec& m, const model::Shape& sh, bool selective, bool dense = false);

/// Of those (no recomputation), the MLP's: its intermediate activations, dispatched and shared expert inputs, and
/// the fc1 input when torch's tensor parallelism saves it gathered. Freed before the attention's backward begins.
double layer_mlp_activation_bytes(const model::ModelSpec& m, const model::Shape& sh);

/// Bytes PyTorch's experimental context parallelism holds during one layer's attention backward beside the layer's
/// saved tensors (stack kernels.context_parallel: torch-allgather, parallel.cp > 1): every cp rank's K, V gathered
/// (16-bit, repeated to the query's heads), grad_query in fp32 and the fp32 dK, dV buffers sent and received round
/// the ring. 0 otherwise (Megatron-LM / Transformer Engine's ring: not modelled).
double context_parallel_attention_bytes(const model::ModelSpec& m, const model::Shape& sh);

/// Activation bytes one layer keeps for one microbatch under torchtitan's per-op selective checkpointing
/// (training.saved_activations torchtitan-op): its input, the outputs of every second mm by count, of
/// scaled_dot_product_attention and of the reduce-scatters (torchtitan 9dec370, parallelize_llama.py, _save_list).
double op_checkpoint_layer_bytes(const model::ModelSpec& m, const model::Shape& sh);

/// Bytes per logit held at the loss's peak: the stack's figure for a vocabulary on one rank or split over tp
/// ranks, else the 16-bit logits and two fp32 copies.
double loss_bytes_per_logit(const stack::StackSpec& st, int64_t tp, int activation_bytes);

/// Parameters one device of `stage` holds.
double stage_params(const model::Transformer& t, const DerivedPlan& plan, int64_t stage);
/// Of those, the expert parameters (mixture of experts; 0 otherwise).
double stage_expert_params(const model::Transformer& t, const DerivedPlan& plan, int64_t stage);

/// `plan` is derive_plan(s).
MemoryReport estimate_memory(const scenario::ScenarioSpec& s, const DerivedPlan& plan, const model::Transformer& t);

}  // namespace dtsim::parallel
