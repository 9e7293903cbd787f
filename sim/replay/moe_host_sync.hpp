#pragma once
/// The host synchronisation of Megatron-Core's `alltoall` token dispatcher (MoEAlltoAllTokenDispatcher,
/// megatron/core/transformer/moe/token_dispatcher.py, core_v0.15 to core_v0.17): all_to_all_single takes its splits
/// from the host, so in every MoE layer forward the dispatcher copies the per-rank and per-expert token counts to
/// the host on a side stream (at its `cuda_dtoh_point`) and waits for that copy (`d2h_event.synchronize()` at its
/// `cuda_sync_point`, "before_ep_alltoall" whenever ep or tp > 1 in dropless training). The backward reuses the
/// host splits: no wait there. After the wait the GPU has only what was queued behind the copy; it idles until the
/// host has dispatched the next operator (the stack's `host.sync_resume`):
/// - without a CUDA graph over the preprocessing the copy is issued before the token permutation
///   ("before_permutation_1"), whose kernels run beside the copy and the host's wait: they hide that much;
/// - with one (cuda_graph_scope holding moe_preprocess, parallel.moe_preprocess_graphed) the copy is issued after
///   the permutation ("before_ep_alltoall"): nothing is queued behind it.
/// The flex dispatcher (DeepEP, HybridEP) is not priced here.
#include <string>
#include <vector>

#include "kernels/compute_model.hpp"
#include "model/transformer.hpp"
#include "replay/step_program.hpp"

namespace dtsim::replay {

/// Seconds the GPU idles at the dispatcher's wait in one MoE layer forward: host.sync_resume, less the token
/// permutation's kernels (ops named "dispatch_permute" before the layer's first expert all-to-all) unless the
/// preprocessing is graphed; never below 0. 0 without a stack's sync_resume. Where the replay prices it at all:
/// scenario/moe_dispatch_wait.hpp.
double moe_dispatch_sync_seconds(const std::vector<model::Segment>& forward, const kernels::ComputeModel& cm,
                                 bool preprocess_graphed);

/// Inserts that wait as a compute step (no FLOPs) just before the first expert all-to-all of `steps` at or after
/// index `from`; nothing where there is none (ep and tp 1) or `seconds` is 0.
void insert_moe_dispatch_sync(std::vector<Step>& steps, size_t from, double seconds, const std::string& label,
                              bool recompute);

}  // namespace dtsim::replay
