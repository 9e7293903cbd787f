#pragma once
/// Building blocks that the algorithms of collectives/algorithms/ share: NCCL's double binary tree over nodes,
/// rings of flows, the traffic of a ring, and what NVLink SHARP needs of a node.
#include <cstdint>
#include <vector>

#include "collectives/algorithm_registry.hpp"

namespace dtsim::collectives {

/// floor(log2(v)) for v >= 1 (0 for v <= 1).
int log2i(int64_t v);

/// Bytes each rank of a ring of `n` sends, per byte of the tensor: 2 (n - 1) / n for an all-reduce, (n - 1) / n for
/// a reduce-scatter or an all-gather.
double ring_volume(Kind kind, int64_t n);

/// The two trees over nodes 0..N-1: heap numbering, the second mirrored. Calls fn(child, parent) per tree link.
template <class Fn>
void for_each_tree_link(int64_t nodes, Fn fn)
{
  for (int tree = 0; tree < 2; ++tree)
    for (int64_t p = 1; p < nodes; ++p) {
      int64_t child = p, parent = (p - 1) / 2;
      if (tree == 1) {
        child = nodes - 1 - child;
        parent = nodes - 1 - parent;
      }
      fn(child, parent);
    }
}

/// Links of one node in the two trees, the most of any node: each tree link carries half the tensor each way.
int64_t max_tree_degree(int64_t nodes);

/// A flow of `each` bytes from every member of `ring` to the next, the last to the first.
void ring_flows(const std::vector<int64_t>& ring, double each, std::vector<Flow>& flows);
/// The flows of ring_flows(ring, each) that touch ring[i], in ring_flows' order, where `ring` (ascending, one member
/// per node) is the ring.
void ring_member_flows(const LoneMembers& ring, int64_t i, double each, std::vector<Flow>& flows);

/// Links of node `node` in the two trees of for_each_tree_link, the first tree's then the second's.
int64_t tree_degree(int64_t nodes, int64_t node);
/// The first node (ascending) with max_tree_degree links.
int64_t first_busiest_tree_node(int64_t nodes);
/// The flows of tree_flows that touch node `node`'s members, in tree_flows' order, where each node holds one member.
void tree_member_flows(const LoneMembers& members, const GroupShape& g, double nic_bytes, int64_t node,
                       std::vector<Flow>& flows);

/// The two trees across the nodes of `by_node`: each tree link, each local rank's NIC, both ways, `nic_bytes` over
/// the busiest node's links.
void tree_flows(const MembersByNode& by_node, const GroupShape& g, double nic_bytes, std::vector<Flow>& flows);

/// Whether the nodes' NVSwitch reduces and multicasts (NVLink SHARP: NVSwitch generation 3, Hopper, or later).
bool nvls_node(const GroupShape& g);

/// NCCL nvlsEfficiency (tuning.cc): Hopper 0.85, Blackwell 0.74; NVSwitch 3 ships with Hopper, 4 with Blackwell.
double nvls_efficiency(const GroupShape& g);

/// The channels NVLS and the NVLS tree cut a tensor over (NVIDIA/nccl at 5067397c, src/transport/nvls.cc):
/// NVLS_NCHANNELS_SM90 16 on Hopper, NVLS_NCHANNELS_SM100_NVL 24 on Blackwell within one NVLink domain (NVSwitch 4).
int64_t nvls_channels(const GroupShape& g);

/// NVLS heads per channel: one per GPU of a node, at most NCCL_MAX_NVLS_ARITY 32 (NVIDIA/nccl at 5067397c,
/// src/graph/search.cc: "Force intra-node NVLS algorithm to pull evenly from all GPUs").
constexpr int64_t kNvlsMaxHeads = 32;

/// NCCL's tuner, NVIDIA/nccl src/graph/tuning.cc at 5067397c (ncclTunerConstantsDefaults), Tree column,
/// hwLatencies[NET] in microseconds per protocol (LL, LL128, Simple): the tree's step across nodes, which the ring
/// also takes with one member per node.
constexpr PerProtocol kTreeNetStepUs{5.0, 8.5, 14.0};

}  // namespace dtsim::collectives
