#pragma once
/// The small collectives a training step runs outside the overlapped gradient, tensor- and pipeline-parallel ones:
/// latency-bound all-reduces of a few bytes whose cost grows with the size of their group (NCCL's ring latency
/// with its steps, its tree's with its depth: collectives/algorithm_registry.hpp). Code facts, Megatron-LM at
/// NVIDIA/Megatron-LM core_r0.12 era (megatron/core/optimizer/clip_grads.py, megatron/training/training.py,
/// pretrain_gpt.py):
/// - gradient clipping: `get_grad_norm_fp32` all-reduces one fp32 (the squared norm) over the group that holds
///   the gradients: the model-parallel group (tp x pp), or every rank where the optimizer is distributed (ZeRO);
///   torchtitan's clip_grad_norm_ reduces its DTensor norm over the whole mesh the same way;
/// - after the optimizer, `train_step` agrees on the update across the model-parallel group
///   (`logical_and_across_model_parallel_group`) and takes the largest gradient norm there
///   (`reduce_max_stat_across_model_parallel_group`): two more one-element all-reduces;
/// - `loss_func` all-reduces the reported loss ([sum, tokens], two fp32) over the data-parallel group after each
///   microbatch's forward on the last pipeline stage (stack key `kernels.loss_all_reduce`).
/// Each is timed as NCCL's predicted time on the group's shape (collective_time), without contention: a few bytes
/// load no link.
#include "parallel/plan.hpp"
#include "scenario/scenario_spec.hpp"

namespace dtsim::parallel {

/// Seconds per step of each kind, on the step's critical path.
struct StepCollectives {
  double grad_norm_s = 0;  ///< the gradient-norm all-reduce before the optimizer
  double agreement_s = 0;  ///< the two model-parallel all-reduces after it
  double loss_s = 0;       ///< the loss all-reduces of every microbatch of the last stage
  double total_s() const { return grad_norm_s + agreement_s + loss_s; }
};

/// `plan` is derive_plan(s).
StepCollectives step_collectives(const scenario::ScenarioSpec& s, const DerivedPlan& plan);

}  // namespace dtsim::parallel
