#pragma once
/// The inter-node bytes of an expert all-to-all, by token dispatcher and routing.
///
/// Node-limited routing (DeepSeek-V3, arXiv 2412.19437, Sec. 2.1.2 and 3.2.2): the routed experts form n_group
/// groups; each token first picks topk_group groups, by the sum of each group's top k / topk_group expert scores
/// (Megatron-Core's group_limited_topk, moe_utils.py), then its top-k experts among them. With the groups laid out
/// over the nodes of the expert-parallel group, a token's experts lie on at most M nodes. M: when the groups fill
/// whole nodes (n_group a multiple of N), min(topk_group, N); when each group spans N / n_group nodes,
/// min(N, topk_group * N / n_group); otherwise N (no bound).
///
/// Dispatchers. Megatron-Core's `alltoall` (MoEAlltoAllTokenDispatcher) sends each of a token's k routed copies to
/// its expert's rank on its own. DeepEP's internode dispatch (deepseek-ai/DeepEP csrc/kernels/internode.cu, dispatch:
/// one RDMA send per token per destination node, to the GPU of the same local index, which forwards it over NVLink to
/// the GPUs of its experts; combine reduces within the node first and sends back once per node) and NVIDIA's
/// HybridEP (DeepEP's hybrid-ep branch, docs/Hybrid-EP_Implementation.md section 8: "Similar to DeepEP, Hybrid-EP
/// first performs IB communication between peer GPUs, then each rank distributes the received inter-node data
/// locally"; its RDMA buffer holds max_tokens_per_rank x (num_nodes - 1) tokens, one per token per other node) send a
/// token once per destination node. The NVLink forwarding on the destination node is not modelled (the intra-node
/// flows stay those of the per-copy all-to-all).
///
/// Derivation. N nodes in the expert-parallel group (scale-up domains), k experts per token, experts spread evenly,
/// the token's own node uniform and independent of its routing (uniform, force-balanced routing: Megatron-Core's
/// moe_router_force_load_balancing scores every expert at random).
/// - Per copy (alltoall): each copy lands on the token's own node with probability 1 / N whatever the routing (node-
///   limited routing picks the nodes, not the share on the own one), so k (N - 1) / N copies per token cross the
///   NICs: the all-to-all dtsim runs, scale 1.
/// - Once per node, with n_group a multiple of N (q = n_group / N groups per node) and topk_group <= k: a group is
///   picked for its top experts, so each picked group receives at least one copy, and a node receives the token
///   unless none of its q groups is picked: P(miss) = C(n_group - q, topk_group) / C(n_group, topk_group). Crossings:
///   (N - 1) (1 - P(miss)). With q = 1 that is topk_group (N - 1) / N. Checked against DeepSeek's selection with
///   random scores (n_group 8, topk_group 4, k 8, 256 experts, 4,000 tokens, pure-Python Monte Carlo): 2.33
///   crossings at N = 4 (this formula 2.36), 3.45 at N = 8 (3.50).
/// - Once per node otherwise: the token's reach is M nodes (M = N without a bound) taken uniformly, its k copies
///   uniform over them: a given node is reached with probability M / N and then receives a copy with probability
///   1 - (1 - 1 / M)^k. Crossings: (N - 1) (M / N) (1 - (1 - 1 / M)^k); without node-limited routing
///   (N - 1) (1 - (1 - 1 / N)^k): 0.45 of the per-copy bytes at N = 4, k = 8.
/// Both once-per-node values are at most M (N - 1) / N and at most k (N - 1) / N: never more crossings than either
/// bound. The inter-node bytes are scaled by once-per-node crossings / (k (N - 1) / N).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "model/model_spec.hpp"

namespace dtsim::model {

/// Nodes one token's experts can lie on, for an expert-parallel group spread over `nodes` nodes.
inline int64_t node_limited_nodes(const ModelSpec& m, int64_t nodes)
{
  const int64_t g = m.expert_groups, pick = m.groups_per_token;
  if (g <= 1 || pick <= 0 || pick >= g || nodes <= 1)
    return nodes;
  if (g % nodes == 0)
    return std::min(pick, nodes);
  if (nodes % g == 0)
    return std::min(nodes, pick * (nodes / g));
  return nodes;
}

/// Expected nodes other than its own that one token is sent to by a dispatcher that sends it once per destination
/// node (DeepEP, HybridEP), for an expert-parallel group spread over `nodes` nodes (derivation above).
inline double once_per_node_crossings(const ModelSpec& m, int64_t nodes)
{
  const int64_t k = m.experts_per_token, g = m.expert_groups, pick = m.groups_per_token;
  if (nodes <= 1 || k <= 0)
    return 0;
  const double others = double(nodes - 1);
  if (g > 1 && pick > 0 && pick < g && pick <= k && g % nodes == 0) {
    const int64_t per_node = g / nodes;
    double miss = 1;  // C(g - per_node, pick) / C(g, pick), 0 once g - per_node < pick
    for (int64_t i = 0; i < pick; ++i)
      miss *= std::max<double>(0, double(g - per_node - i)) / double(g - i);
    return others * (1 - miss);
  }
  const double reach = double(node_limited_nodes(m, nodes));
  return others * (reach / double(nodes)) * (1 - std::pow(1 - 1 / reach, double(k)));
}

/// Factor on the bytes of the expert all-to-all's inter-node flows: 1 for a dispatcher that sends every routed copy
/// on its own; once_per_node_crossings over the per-copy crossings k (N - 1) / N for one that sends a token once per
/// destination node.
inline double expert_inter_node_scale(const ModelSpec& m, int64_t nodes, bool once_per_node)
{
  if (!once_per_node || nodes <= 1 || m.experts_per_token <= 0)
    return 1.0;
  const double per_copy = double(m.experts_per_token) * double(nodes - 1) / double(nodes);
  return std::min(1.0, once_per_node_crossings(m, nodes) / per_copy);
}

}  // namespace dtsim::model
