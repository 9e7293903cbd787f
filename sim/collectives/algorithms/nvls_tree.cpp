// NCCL's NVLS tree: NVLink SHARP within each node, the double binary tree across nodes.
#include <algorithm>

#include "collectives/algorithm_parts.hpp"
#include "collectives/channel_caps.hpp"

namespace dtsim::collectives {

namespace {

// NCCL's tuner, NVIDIA/nccl src/graph/tuning.cc at 5067397c (ncclTunerConstantsDefaults), NVLSTree column: Simple
// only (ncclTopoTuneModel skips LL and LL128 for it), baseLatencies 0, hwLatencies[NVLINK] 25 us,
// hwLatencies[NET] 20.9 us.
constexpr double kNvlinkStepUs = 25;
constexpr double kNetStepUs = 20.9;

bool nvls_tree_applicable(Protocol p, Kind kind, const GroupShape& g)
{
  return p == Protocol::Simple && kind == Kind::AllReduce && g.nodes > 1 && g.uniform && g.per_node() >= 2 &&
         nvls_node(g);
}

double nvls_tree_fraction(Protocol, const GroupShape& g) { return nvls_efficiency(g); }

// tuning.cc: at most perChMaxNVLSTreeBws per channel; its graph has one head per member of a node, each with its
// NIC, as many channels as the ring's.
double nvls_tree_bus_cap_Bps(Protocol, const GroupShape& g) { return channel_cap_Bps(ChannelCap::NvlsTree, g); }

AlgorithmCost nvls_tree_cost(Protocol, Kind, const GroupShape& g)
{
  AlgorithmCost c;
  const int64_t N = std::max<int64_t>(1, g.nodes), k = g.per_node();
  c.network_steps = 2 * log2i(N);
  c.latency_us = kNvlinkStepUs + double(c.network_steps) * kNetStepUs;
  c.nvlink_factor = 1.0 + 1.0 / double(k);
  // Each tree link carries half the tensor each way: on two nodes the NICs carry half a ring's bytes (NCCL's tuner
  // doubles the network's bandwidth there, tuning.cc "Handle 2 node case of NVLSTree"); beyond two nodes the tuner
  // gives it the network's bandwidth alone, a ring's bytes, and so do measurements: 334.7 GB/s against the ring's
  // 334.8 on 4 nodes of 8 x B200 with 8 NDR NICs, 306.8 against 322.6 on 8 (together-nccl-tests, reference A.6).
  const double tree_bytes = 0.5 * double(max_tree_degree(N));
  c.nic_factor = (N > 2 ? std::max(tree_bytes, ring_volume(Kind::AllReduce, g.ranks)) : tree_bytes) / double(k);
  return c;
}

void nvls_tree_lay_flows(const std::vector<int64_t>&, const MembersByNode& by_node, const GroupShape& g,
                         double nvlink_bytes, double nic_bytes, std::vector<Flow>& flows)
{
  for (const auto& members : by_node)
    ring_flows(members, nvlink_bytes, flows);
  tree_flows(by_node, g, nic_bytes, flows);
}

}  // namespace

AlgorithmDef nvls_tree_algorithm()
{
  AlgorithmDef a;
  a.name = "nvls_tree";
  a.summary = "NVLink SHARP within each node, double binary tree across nodes (NCCL NVLS tree)";
  a.applies = "all-reduce across nodes of NVSwitch generation 3 or later, two or more members per node";
  a.applicable = nvls_tree_applicable;
  a.bandwidth_fraction = nvls_tree_fraction;
  a.nics_at_goodput = true;  // the protocol's fraction applies to the in-switch part only
  a.bus_cap_Bps = nvls_tree_bus_cap_Bps;
  a.cost = nvls_tree_cost;
  a.lay_flows = nvls_tree_lay_flows;
  return a;
}

}  // namespace dtsim::collectives
