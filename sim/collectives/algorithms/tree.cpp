// NCCL's double binary tree: a chain within each node, two complementary binary trees across nodes.
#include <algorithm>
#include <array>
#include <cmath>

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

// How NCCL cuts a channel's share of the tensor for the tree under LL128 (NVIDIA/nccl src/enqueue.cc, the tree LL128
// branch of calcCollChunking at v2.22.3-1, v2.24.3-1 and 5067397c): from the LL128 step, buffSizes[LL128] /
// NCCL_STEPS = 120 x 640 x 8 B, of which 15 of every 16 words are data (576,000 B), halved while the share holds fewer
// than nsteps x 64 / ppn chunks and the chunk is over 128 KiB, then while it holds fewer than nsteps x 16 / ppn and the
// chunk is over 32 KiB (nsteps = 1 + log2 N + 0.1 ppn), aligned down to the LL128 grain, 32 threads x 8 words x
// 15/16 x 8 B = 1,920 B (ncclProtoGrainSize); a share smaller than the chunk is one chunk. Releases from 2.22.3 cut
// each channel's share apart (nChannels 1, the channel's bytes), 2.20.3-2.21.x the tensor over nChannels (the same
// ratio); v2.19.4-1 (computeColl) halves the chunk's wire bytes, 16/15 of these, and does not align it (18,000 B
// against 17,280 on 4 x 8 H100 at 1 MiB), and its runTreeSplit takes the share as one chunk below a loop, as here:
// not told apart.
constexpr double kTreeLl128StepDataBytes = 120.0 * 640.0 * 8.0 * 15.0 / 16.0;
constexpr double kTreeLl128GrainBytes = 1920;

double tree_ll128_chunk_bytes(double channel_bytes, int64_t nodes, int64_t per_node)
{
  const double ppn = double(per_node);
  const double nsteps = 1.0 + double(log2i(nodes)) + 0.1 * ppn;
  double chunk = kTreeLl128StepDataBytes;
  while (std::floor(channel_bytes / chunk) < nsteps * 64.0 / ppn && chunk > 131072)
    chunk = std::floor(chunk / 2);
  while (std::floor(channel_bytes / chunk) < nsteps * 16.0 / ppn && chunk > 32768)
    chunk = std::floor(chunk / 2);
  return std::max(kTreeLl128GrainBytes, std::floor(chunk / kTreeLl128GrainBytes) * kTreeLl128GrainBytes);
}

// The tree's pipeline fill under LL128, which NCCL's tuner does not charge (it counts each hop's latency and the
// tensor once at the busiest link). The tree all-reduce runs up and down at once on each channel, 70% of its 640
// threads reducing up and the rest broadcasting down (src/device/all_reduce.h runTreeSplit: nthreadsSplit, 14 and 6
// warps; enqueue.cc topoGetAlgoInfo: "Tree now uses all threads always", NCCL_MAX_NTHREADS 640), and in
// prims_ll128.h GenericOp each warp takes a 1,920 B slice of the chunk, waits until every line of it has arrived
// (recvReduceSendCopy's flag loop) and only then sends it on: a hop hands on a pass of the group's warps, at most
// the chunk (up 14 x 1,920 = 26,880 B, down 6 x 1,920 = 11,520 B). The first pass crosses every hop, up the chain
// of the node's k - 1 NVLink hops and the log2 N network hops, and down again, before the busiest link is busy: each
// hop takes the pass of every channel through one device's NVLink, or of the channels through one NIC (a NIC per
// member of the node), at the protocol's share of the link's goodput. The run adds what those hops take beyond the
// one at the busiest link, which the tuner's bandwidth already counts. Channels: the kernels', fewer while the
// tensor is under channels x 640 threads x 8 B (NCCL_LL128_THREAD_THRESHOLD, topoGetAlgoInfo). Measured, 4 x 8 H100
// under NCCL 2.24.3 (reference A.3.a): 1 MiB in 92.5 us; NCCL's tuner 80.6 us, this 92.5 us (16 channels of 64 KiB,
// 17,280 B chunks). LL forwards each 8 B line as it arrives and Simple is not modelled here.
constexpr double kTreeLl128Threads = 640;
constexpr double kTreeLl128ThreadThresholdBytes = 8;
constexpr double kTreeUpWarps = 14, kTreeDownWarps = 6;

double tree_run_latency_us(Protocol p, Kind kind, const GroupShape& g, double bytes, double, double)
{
  if (p != Protocol::LL128 || kind != Kind::AllReduce || bytes <= 0)
    return 0;
  const int kernel_channels = ring_kernel_channels(g);
  if (kernel_channels == 0)
    return 0;
  const int64_t N = std::max<int64_t>(1, g.nodes), k = g.per_node();
  if ((N > 1 && g.nic_Bps <= 0) || (k > 1 && g.nvlink_Bps <= 0))
    return 0;
  const double channels = std::clamp(std::floor(bytes / (kTreeLl128Threads * kTreeLl128ThreadThresholdBytes)), 1.0,
                                     double(kernel_channels));
  const double share = bytes / channels;
  const double chunk = std::min(share, tree_ll128_chunk_bytes(share, N, k));
  const double frac = tree_fraction(p, kind, g);
  // Seconds per byte of a pass at a hop: every channel's pass through one device's NVLink, or a NIC's channels'.
  const double nvlink_s = k > 1 ? channels / (g.nvlink_Bps * frac) : 0.0;
  const double nic_s = N > 1 ? channels / double(k) / (g.nic_Bps * frac) : 0.0;
  double total_s = 0, slowest_s = 0;
  for (double warps : {kTreeUpWarps, kTreeDownWarps}) {
    const double pass = std::min(chunk, warps * kTreeLl128GrainBytes);
    total_s += pass * (double(k - 1) * nvlink_s + double(log2i(N)) * nic_s);
    slowest_s = std::max(slowest_s, pass * std::max(nvlink_s, nic_s));
  }
  return (total_s - slowest_s) * 1e6;
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
  a.run_latency_us = tree_run_latency_us;
  a.lay_flows = tree_lay_flows;
  a.lay_member_flows = tree_lay_member_flows;
  a.member_flows = [](int64_t node, const GroupShape& g) { return tree_degree(g.nodes, node); };
  a.first_busiest_node = [](const GroupShape& g) { return first_busiest_tree_node(g.nodes); };
  return a;
}

}  // namespace dtsim::collectives
