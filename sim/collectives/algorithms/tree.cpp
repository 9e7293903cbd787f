// NCCL's double binary tree: a chain within each node, two complementary binary trees across nodes.
#include <algorithm>

#include "collectives/algorithm_parts.hpp"

namespace dtsim::collectives {

namespace {

// NCCL's tuner, NVIDIA/nccl src/graph/tuning.cc at 5067397c (ncclTunerConstantsDefaults), Tree column, in
// microseconds per protocol (LL, LL128, Simple): baseLatencies, hwLatencies[NVLINK], hwLatencies[NET].
constexpr PerProtocol kBaseLatencyUs{6.8, 14.0, 8.4};
constexpr PerProtocol kNvlinkStepUs{0.6, 1.25, 4.0};
constexpr PerProtocol kNetStepUs{5.0, 8.5, 14.0};

bool tree_applicable(Protocol, Kind kind, const GroupShape& g) { return kind == Kind::AllReduce && g.uniform; }

// tuning.cc, "Various model refinements": tree all-reduce busBw * .92, then LL / 3.8, LL128 * 7/9 (one node) or
// 120/128 (several).
double tree_fraction(Protocol p, const GroupShape& g)
{
  return 0.92 * (p == Protocol::LL ? 1.0 / 3.8
                 : p == Protocol::LL128 ? (g.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0)
                                        : 1.0);
}

AlgorithmCost tree_cost(Protocol p, Kind, const GroupShape& g)
{
  AlgorithmCost c;
  const size_t pi = size_t(p);
  const int64_t N = std::max<int64_t>(1, g.nodes), k = g.per_node();
  c.latency_us = kBaseLatencyUs[pi];
  c.latency_us += 2 * (double(k - 1) * kNvlinkStepUs[pi] + double(log2i(N)) * kNetStepUs[pi]);
  c.nvlink_factor = k > 1 ? 2.0 : 0.0;  // the chain's reduce and broadcast each pass S over a device's link
  c.nic_factor = N > 1 ? 0.5 * double(max_tree_degree(N)) / double(k) : 0.0;
  return c;
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

}  // namespace

AlgorithmDef tree_algorithm()
{
  AlgorithmDef a;
  a.name = "tree";
  a.summary = "chain within each node, two complementary binary trees across nodes (NCCL double binary tree)";
  a.applies = "all-reduce";
  a.applicable = tree_applicable;
  a.bandwidth_fraction = tree_fraction;
  a.cost = tree_cost;
  a.ll_capped_s = tree_ll_capped_s;
  a.lay_flows = tree_lay_flows;
  return a;
}

}  // namespace dtsim::collectives
