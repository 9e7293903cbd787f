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
/// The flex dispatchers wait on the host once per dispatch forward too, for the token counts their own
/// preprocessing kernel writes, before they can size the received tokens' buffers and launch the dispatch; nothing
/// of theirs is queued behind the wait, graphed router and preprocessing or not, so the GPU idles for the whole
/// host.sync_resume:
/// - DeepEP (deep_ep/csrc/deep_ep.cpp, intranode_dispatch and internode_dispatch without a cached handle): after the
///   notify kernel the host spins on the mapped counters moe_recv_counter and moe_recv_expert_counter ("DeepEP
///   error: timeout (dispatch CPU)"), then allocates recv_x and launches the dispatch kernel;
/// - HybridEP (deep_ep/hybrid_ep_buffer.py, dispatch_with_permute without a handle): after the routing map's
///   all-gather and the metadata preprocessing kernel, `num_dispatched_tokens_tensor.cpu()` (use_host_meta, the
///   default), then the dispatch kernel. Megatron-Core passes no handle and, dropless, no num_permuted_tokens ("None
///   means no up-bound, will cause a CPU sync": _HybridEPManager, token_dispatcher.py at 0d8e0714, the 25.11
///   Megatron-Bridge v0.2.0 submodule, and 2edffadb, v0.4.2's; the performance scripts' force-balanced dropless
///   runs, use_tokendrop False, set moe_expert_capacity_factor -1 and moe_pad_expert_input_to_capacity False:
///   scripts/performance/utils/overrides.py at v0.4.2, helpers.py at v0.2.0). A second wait, inside the
///   runtime's dispatch_with_permute (fused_a2a.py: `non_blocking = num_permuted_tokens is not None`), is not
///   priced: its kernel order was not read.
/// Neither waits in backward (the handle from the forward is reused). Under the paired schedules
/// (parallel.ep_overlap) the other unit's kernels are queued behind any of these waits: not priced there.
#include <string>
#include <vector>

#include "kernels/compute_model.hpp"
#include "model/token_dispatcher.hpp"
#include "model/transformer.hpp"
#include "replay/step_program.hpp"

namespace dtsim::replay {

/// Seconds the GPU idles at the dispatcher's wait in one MoE layer forward: host.sync_resume, less the token
/// permutation's kernels (ops named "dispatch_permute" before the layer's first expert all-to-all) under the
/// alltoall dispatcher unless the preprocessing is graphed; the whole host.sync_resume under a flex dispatcher;
/// never below 0. 0 without a stack's sync_resume. Where the replay prices it at all: scenario/moe_dispatch_wait.hpp.
double moe_dispatch_sync_seconds(const std::vector<model::Segment>& forward, const kernels::ComputeModel& cm,
                                 model::TokenDispatcher dispatcher, bool preprocess_graphed);

/// Inserts that wait as a compute step (no FLOPs) just before the first expert all-to-all of `steps` at or after
/// index `from`; nothing where there is none (ep and tp 1) or `seconds` is 0.
void insert_moe_dispatch_sync(std::vector<Step>& steps, size_t from, double seconds, const std::string& label,
                              bool recompute);

}  // namespace dtsim::replay
