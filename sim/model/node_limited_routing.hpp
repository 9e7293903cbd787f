#pragma once
/// Node-limited routing (DeepSeek-V3, arXiv 2412.19437, Sec. 2.1.2 and 3.2.2): the routed experts form n_group
/// groups; each token first picks topk_group groups, then its top-k experts among them. With the groups laid out
/// over the nodes of the expert-parallel group, a token's experts lie on at most M nodes, and DeepSeek's dispatch
/// sends each token over InfiniBand once per target node, to the GPU of the same in-node index, which forwards it
/// over NVLink to the GPUs of its experts ("each token is dispatched to at most 4 nodes", Sec. 3.2.2).
///
/// Derivation. N nodes in the expert-parallel group, k experts per token, experts spread evenly. Without the limit
/// each of the k copies of a token lands on a uniformly chosen rank, so k (N - 1) / N copies per token cross the
/// NICs (the uniform all-to-all dtsim runs). With it, the token crosses once per target node other than its own:
/// at most M, on average M (N - 1) / N with the target nodes uniform. The inter-node bytes are therefore scaled by
/// M / k (at most 1), and the intra-node bytes are left as they are (the NVLink forwarding on the target node is not
/// modelled). M: when the groups fill whole nodes (n_group a multiple of N), min(topk_group, N); when each group
/// spans N / n_group nodes, min(N, topk_group * N / n_group); otherwise N (no bound).
#include <algorithm>
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

/// Factor on the bytes of the expert all-to-all's inter-node flows: M / k under node-limited routing (1 without it,
/// or when M >= k).
inline double node_limited_inter_node_scale(const ModelSpec& m, int64_t nodes)
{
  const int64_t reach = node_limited_nodes(m, nodes);
  if (reach >= nodes || m.experts_per_token <= 0 || reach >= m.experts_per_token)
    return 1.0;
  return double(reach) / double(m.experts_per_token);
}

}  // namespace dtsim::model
