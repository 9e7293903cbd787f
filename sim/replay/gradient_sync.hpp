#pragma once
/// The rules by which a device's data-parallel communicator reduces gradients (PyTorch DDP, Megatron-LM): which units
/// reduce them, in which collective, and the buckets a chunk's gradients fill. One set of rules for the replay
/// (dp_queue.cpp) and the search's lower bound (systems/gpu_cluster/step_bound.cpp), so that the bound prices the
/// collectives the replay runs.
#include <cstdint>
#include <utility>
#include <vector>

#include "parallel/collective.hpp"
#include "parallel/plan.hpp"
#include "parallel/schedule.hpp"
#include "replay/step_program.hpp"

namespace dtsim::replay {

/// Whether unit `u` reduces its gradients in this step: with more than one data-parallel rank, on the last of
/// `microbatches`, or on every one when the gradients are sharded (ZeRO 2 and 3 keep only 1/dp of them between
/// microbatches) and their sync is not deferred.
bool reduces_gradients(const parallel::DerivedPlan& plan, int64_t microbatches, const parallel::Unit& u);

/// Whether `u`'s gradients release buckets as the backward produces them (dp_overlap).
bool releases_buckets(const parallel::DerivedPlan& plan, int64_t microbatches, const parallel::Unit& u);

/// The gradients' collective: a reduce-scatter under ZeRO (each rank needs only its shard), else an all-reduce; an
/// all-reduce also under ZeRO 1 and 2 where the stack says so (DeepSpeed: kernels.zero_gradients).
collectives::Kind gradient_collective(const parallel::DerivedPlan& plan);

/// For each gradient entry of a chunk, in backward order, the bytes of the bucket it completes, 0 if none: expert and
/// non-expert gradients fill separate buckets (they are reduced over different groups), each closed when it holds
/// `bucket_bytes` or at the chunk's last entry of its kind.
std::vector<double> gradient_buckets(const ChunkGradients& grads, double bucket_bytes);

/// A stage's gradients reduced in one collective once its backward is over (no dp_overlap, ZeRO 0-1): the bytes of
/// its non-expert entries (`first`) and of its expert entries (`second`), summed entry by entry in backward order.
std::pair<double, double> whole_stage_gradients(const std::vector<ChunkGradients>& chunks);

}  // namespace dtsim::replay
