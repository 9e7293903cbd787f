// NCCL's double binary tree: a chain within each node, two complementary binary trees across nodes.
#include <algorithm>
#include <array>

#include "collectives/algorithm_parts.hpp"
#include "collectives/channel_caps.hpp"

namespace dtsim::collectives {

namespace {

// NCCL's tuner, NVIDIA/nccl src/graph/tuning.cc at 5067397c (ncclTunerConstantsDefaults), Tree column, in
// microseconds per protocol (LL, LL128, Simple): baseLatencies, hwLatencies[NVLINK]; its hwLatencies[NET] is
// kTreeNetStepUs (algorithm_parts.hpp), which the ring shares.
constexpr PerProtocol kTreeBaseLatencyUs{6.8, 14.0, 8.4};
constexpr PerProtocol kTreeNvlinkStepUs{0.6, 1.25, 4.0};

bool tree_applicable(Protocol, Kind kind, const GroupShape& g) { return kind == Kind::AllReduce && g.uniform; }

// tuning.cc, "Various model refinements": tree all-reduce busBw * .92, then LL / 3.8, LL128 * 7/9 (one node) or
// 120/128 (several).
double tree_fraction(Protocol p, Kind, const GroupShape& g)
{
  return 0.92 * (p == Protocol::LL ? 1.0 / 3.8
                 : p == Protocol::LL128 ? (g.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0)
                                        : 1.0);
}

// tuning.cc's refinements in their order: a tree all-reduce at most perChMaxTreeBws per channel, then / 3.8 under LL
// and x 7/9 (one node) or 120/128 (several) under LL128, there at most perChMaxTreeLL128Bws per channel.
double tree_bus_cap_Bps(Protocol p, const GroupShape& g)
{
  const double tree = channel_cap_Bps(ChannelCap::Tree, g);
  if (tree <= 0 || p == Protocol::Simple)
    return tree;
  if (p == Protocol::LL)
    return tree / 3.8;
  return std::min(tree * (g.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), channel_cap_Bps(ChannelCap::TreeLL128, g));
}

AlgorithmCost tree_cost(Protocol p, Kind, const GroupShape& g)
{
  AlgorithmCost c;
  const size_t pi = size_t(p);
  const int64_t N = std::max<int64_t>(1, g.nodes), k = g.per_node();
  c.latency_us = kTreeBaseLatencyUs[pi];
  c.network_steps = 2 * log2i(N);
  c.latency_us += 2 * double(k - 1) * kTreeNvlinkStepUs[pi] + double(c.network_steps) * kTreeNetStepUs[pi];
  c.nvlink_factor = k > 1 ? 2.0 : 0.0;  // the chain's reduce and broadcast each pass S over a device's link
  // Each tree link carries half the tensor each way. Beyond two nodes NCCL's tuner prices every node as interior
  // in one tree and a leaf in the other, 4 links (tuning.cc: the network's bandwidth for nNodes > 2, then bus to
  // algorithm bandwidth x .5), though the heap trees of 3 and 4 nodes leave the root without a parent (3 links);
  // measured, the tree on 4 nodes of 8 NDR NICs runs slower still (190.7 GB/s against the ring's 334.8, 8 x B200,
  // together-nccl-tests, reference A.6).
  const int64_t links = N > 2 ? std::max<int64_t>(4, max_tree_degree(N)) : max_tree_degree(N);
  c.nic_factor = N > 1 ? 0.5 * double(links) / double(k) : 0.0;
  return c;
}

// NCCL's treeCorrectionFactor (tuning.cc at 5067397c, applied in ncclTopoGetAlgoTime to tree all-reduce): "trees are
// not perfectly sticking to the model for medium sizes", a factor of the bandwidth per power of two of the tensor
// from 64 B (row: LL, LL128, Simple; column: log2(bytes / 64)), none from 512 MiB up (column 23 is never read).
constexpr std::array<std::array<double, 23>, 3> kTreeCorrection{{
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
}};

SizeEffect tree_size_effect(Protocol p, Kind kind, const GroupShape&, double bytes)
{
  SizeEffect e;
  const int64_t units = int64_t(bytes) >> 6;
  if (kind != Kind::AllReduce || units < 1)
    return e;
  const int column = log2i(units);
  if (column < int(kTreeCorrection[0].size()))
    e.fraction = kTreeCorrection[size_t(p)][size_t(column)];
  return e;
}

// The tree's algorithm bandwidth is half its bus bandwidth.
double tree_ll_capped_s(double bus_s, int64_t n) { return bus_s * double(n) / double(n - 1); }

void tree_lay_flows(const std::vector<int64_t>&, const MembersByNode& by_node, const GroupShape& g,
                    double nvlink_bytes, double nic_bytes, std::vector<Flow>& flows)
{
  for (const auto& members : by_node)  // the chain: reduce up, broadcast down
    for (size_t l = 0; l + 1 < members.size(); ++l) {
      flows.push_back({members[l], members[l + 1], nvlink_bytes / 2});
      flows.push_back({members[l + 1], members[l], nvlink_bytes / 2});
    }
  if (g.nodes > 1)
    tree_flows(by_node, g, nic_bytes, flows);
}

// One member per node: no chain, the two trees' flows of the node.
void tree_lay_member_flows(const LoneMembers& members, const GroupShape& g, double, double nic_bytes, int64_t node,
                           std::vector<Flow>& flows)
{
  if (g.nodes > 1)
    tree_member_flows(members, g, nic_bytes, node, flows);
}

}  // namespace

AlgorithmDef tree_algorithm()
{
  AlgorithmDef a;
  a.name = "tree";
  a.summary = "chain within each node, two complementary binary trees across nodes (NCCL double binary tree)";
  a.applies = "all-reduce";
  a.applicable = tree_applicable;
  a.bandwidth_fraction = tree_fraction;
  a.bus_cap_Bps = tree_bus_cap_Bps;
  a.cost = tree_cost;
  a.ll_capped_s = tree_ll_capped_s;
  a.size_effect = tree_size_effect;
  a.lay_flows = tree_lay_flows;
  a.lay_member_flows = tree_lay_member_flows;
  a.member_flows = [](int64_t node, const GroupShape& g) { return tree_degree(g.nodes, node); };
  a.first_busiest_node = [](const GroupShape& g) { return first_busiest_tree_node(g.nodes); };
  return a;
}

}  // namespace dtsim::collectives
