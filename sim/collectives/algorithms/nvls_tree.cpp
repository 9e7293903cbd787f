// NCCL's NVLS tree: NVLink SHARP within each node, the double binary tree across nodes.
#include <algorithm>

#include "collectives/algorithm_parts.hpp"
#include "collectives/channel_caps.hpp"

namespace dtsim::collectives {

namespace {

// NCCL's tuner, NVIDIA/nccl src/graph/tuning.cc (ncclTopoTuneModel), NVLSTree column: Simple only (LL and LL128
// are skipped for it), baseLatencies 0, hwLatencies[NVLINK] 25 us (from v2.21.5-1), hwLatencies[NET] 14 us from
// v2.20.3-1 and 20.9 us from v2.28.9-1 (tag v2.28.7-1 still has 14; 5067397c has 20.9).
constexpr double kNvlsTreeNvlinkStepUs = 25;
constexpr double kNvlsTreeNetStepUs = 14;
constexpr double kNvlsTreeNetStepUsFrom2289 = 20.9;

// The NCCL releases, as NCCL_VERSION_CODE, where the NVLS tree's model changed. v2.28.3-1 rewrote its bandwidth:
// before, the tuner takes per channel min(bwIntra, bwInter) on two nodes and min(bwIntra, bwInter / 2) beyond, and
// converts bus to algorithm bandwidth by 5/6 (tuning.cc at v2.20.3-1 to v2.27.7-1: "bwInter/2", "ratio *= 5.0/6.0");
// from v2.28.3-1 it takes nvlsEfficiency, doubles the network's bandwidth on two nodes, caps each channel at
// perChMaxNVLSTreeBws and converts by nRanks / nsteps, as a ring. A stack that does not publish its NCCL
// ("unpublished", 0) takes the releases before 2.23 (stack key `nccl`), so the earlier model.
constexpr int kRemodelledNccl = 22803;
constexpr int kNetStepRaisedNccl = 22809;

bool remodelled(const GroupShape& g) { return g.nccl_version >= kRemodelledNccl; }

bool nvls_tree_applicable(Protocol p, Kind kind, const GroupShape& g)
{
  return p == Protocol::Simple && kind == Kind::AllReduce && g.nodes > 1 && g.uniform && g.per_node() >= 2 &&
         nvls_node(g);
}

// The in-switch part's share of the NVLinks: nvlsEfficiency from 2.28.3; before, the bus to algorithm ratio 5/6.
double nvls_tree_fraction(Protocol, Kind, const GroupShape& g)
{
  return remodelled(g) ? nvls_efficiency(g) : 5.0 / 6.0;
}

// tuning.cc from 2.28.3: at most perChMaxNVLSTreeBws per channel; its graph has one head per member of a node, each
// with its NIC, as many channels as the ring's. Before 2.28.3 no such cap.
double nvls_tree_bus_cap_Bps(Protocol, const GroupShape& g)
{
  return remodelled(g) ? channel_cap_Bps(ChannelCap::NvlsTree, g) : 0.0;
}

AlgorithmCost nvls_tree_cost(Protocol, Kind, const GroupShape& g)
{
  AlgorithmCost c;
  const int64_t N = std::max<int64_t>(1, g.nodes), k = g.per_node();
  c.network_steps = 2 * log2i(N);
  const double net_step_us = g.nccl_version >= kNetStepRaisedNccl ? kNvlsTreeNetStepUsFrom2289 : kNvlsTreeNetStepUs;
  c.latency_us = kNvlsTreeNvlinkStepUs + double(c.network_steps) * net_step_us;
  c.nvlink_factor = 1.0 + 1.0 / double(k);
  if (!remodelled(g)) {
    // Before 2.28.3: one channel per head, each head's NIC at the network's speed on two nodes and half of it
    // beyond, and the algorithm bandwidth 5/6 of the bus bandwidth: a NIC carries 6/5 of its head's share of the
    // tensor on two nodes, 12/5 beyond. Measured, 4 x 8 H100 under NCCL 2.24.3 (reference A.3.a): from 16 to
    // 128 MiB the all-reduce adds 163-183 GB/s of algorithm bandwidth per added byte, where 8 NICs of 48.5 GB/s
    // give 162 by this rule and 200 by the ring's bytes.
    c.nic_factor = (N > 2 ? 12.0 / 5.0 : 6.0 / 5.0) / double(k);
    return c;
  }
  // Each tree link carries half the tensor each way: on two nodes the NICs carry half a ring's bytes (NCCL's tuner
  // doubles the network's bandwidth there, tuning.cc "Handle 2 node case of NVLSTree"); beyond two nodes the tuner
  // gives it the network's bandwidth alone, a ring's bytes, and so do measurements: 334.7 GB/s against the ring's
  // 334.8 on 4 nodes of 8 x B200 with 8 NDR NICs, 306.8 against 322.6 on 8 (together-nccl-tests, reference A.6).
  const double tree_bytes = 0.5 * double(max_tree_degree(N));
  c.nic_factor = (N > 2 ? std::max(tree_bytes, ring_volume(Kind::AllReduce, g.ranks)) : tree_bytes) / double(k);
  return c;
}

// How NCCL cuts the tensor for the NVLS tree (NVIDIA/nccl, the same at v2.24.3-1 and 5067397c for Hopper): 16
// channels (src/transport/nvls.cc NVLS_NCHANNELS 16; dtsim takes NVLS's 24 on Blackwell, whose multi-node tuning,
// ncclNvlsTreeSm100Tuning at 5067397c, is not modelled), one head per GPU of a node, and chunks of
// NCCL_NVLS_CHUNKSIZE 128 KiB, at most 64 KiB from 4 nodes up (nvls.cc treeMaxChunkSize), cut to 64 KiB below 4
// chunks per head of every channel and to 32 KiB below one (src/enqueue.cc calcCollChunking, NVLS_TREE branch).

double chunk_bytes(double bytes, int64_t nodes, double streams)
{
  double c = nodes >= 4 ? 65536 : 131072;
  if (bytes < 4 * streams * c && c > 65536)
    c = 65536;
  if (bytes < streams * c && c > 32768)
    c = 32768;
  return c;
}

// The run's pipeline fill, which NCCL's tuner does not charge: the tree's first chunk crosses each of its 2 log2 N
// network hops (up the tree and down again) before every hop is busy, and crosses each at its channel's share of its
// head's NIC (every channel of a head goes out through that head's NIC), where the tuner counts only each hop's
// latency. Measured, 4 x 8 H100 under NCCL 2.24.3 (reference A.3.a): from 4 to 64 MiB the all-reduce takes 160-170
// us beyond its bytes at the tuner's bandwidth, the tuner's latency 81 us; the fill gives 43 us from 4 to 8 MiB (32
// KiB chunks) and 86 us above (64 KiB); below 4 MiB a stream holds less than a chunk (2 MiB: 16 KiB, 22 us).
double nvls_tree_run_latency_us(Protocol, Kind, const GroupShape& g, double bytes, double, double)
{
  const int64_t N = std::max<int64_t>(1, g.nodes);
  if (N < 2 || g.nic_Bps <= 0 || bytes <= 0)
    return 0;
  const double channels = double(nvls_channels(g));
  const double streams = channels * double(std::min(g.per_node(), kNvlsMaxHeads));
  const double hops = double(2 * log2i(N));
  const double first = std::min(chunk_bytes(bytes, N, streams), bytes / streams);  // a stream may hold less
  return hops * first * channels / g.nic_Bps * 1e6;
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
  a.run_latency_us = nvls_tree_run_latency_us;
  a.lay_flows = nvls_tree_lay_flows;
  return a;
}

}  // namespace dtsim::collectives
