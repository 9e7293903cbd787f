// NCCL's ring: through every member; across nodes each node's NICs carry one channel each.
#include <algorithm>
#include <cmath>

#include "collectives/algorithm_parts.hpp"
#include "collectives/channel_caps.hpp"

namespace dtsim::collectives {

namespace {

// NCCL's tuner, NVIDIA/nccl src/graph/tuning.cc at 5067397c (ncclTunerConstantsDefaults), Ring column, in
// microseconds per protocol (LL, LL128, Simple): baseLatencies, hwLatencies[NVLINK], hwLatencies[NET]; with one
// member per node the inter-node step is the tree's, kTreeNetStepUs (algorithm_parts.hpp).
constexpr PerProtocol kRingBaseLatencyUs{6.6, 14.0, 8.4};
constexpr PerProtocol kRingNvlinkStepUs{0.6, 1.9, 3.4};
constexpr PerProtocol kRingNetStepUs{2.7, 4.0, 14.0};

bool ring_applicable(Protocol, Kind, const GroupShape&) { return true; }

// The NCCL releases, as NCCL_VERSION_CODE, where the ring's protocol fractions changed (tuning.cc, "Various model
// refinements", read tag by tag from v2.12.12-1): LL took a quarter of the bus bandwidth for all-reduce and across
// nodes and a third for all-gather and reduce-scatter within a node up to v2.20.5-1 ("busBw * ((nNodes > 1 ||
// coll == ncclFuncAllReduce || coll == ncclFuncReduce) ? 1.0/4.0 : 1.0/3.0)"), half from v2.21.5-1 ("busBw * .5");
// LL128 took 0.7 with one GPU per node up to v2.22.3-1 ("ppn < 2 ? 0.7 : 0.92": "sending/receiving at the same GPU
// through the NIC, apply some bw discount"), 0.92 from v2.23.4-1. The earlier fractions apply where the stack names
// its release; one that does not ("unpublished", 0) keeps LL's half and LL128's 0.92 (its stacks were fitted with
// them: the 0.7 would move the DeepSeek-V3 search's best step by +3.2%, docs/validation.md, section 9).
constexpr int kLlHalvedNccl = 22100;
constexpr int kLl128OnePerNodeDroppedNccl = 22300;

double ring_fraction(Protocol p, Kind kind, const GroupShape& g)
{
  if (p == Protocol::LL) {
    if (!g.nccl_named_before(kLlHalvedNccl))
      return 0.5;
    return g.nodes > 1 || kind == Kind::AllReduce ? 1.0 / 4.0 : 1.0 / 3.0;
  }
  if (p == Protocol::LL128) {
    const bool one_per_node = g.nodes > 1 && g.per_node() < 2;
    return one_per_node && g.nccl_named_before(kLl128OnePerNodeDroppedNccl) ? 0.7 : 0.92;
  }
  return 1.0;
}

// tuning.cc: a ring under LL128 at most perChMaxRingLL128Bws per channel; LL and Simple have no channel cap.
double ring_bus_cap_Bps(Protocol p, const GroupShape& g)
{
  return p == Protocol::LL128 ? channel_cap_Bps(ChannelCap::RingLL128, g) : 0.0;
}

AlgorithmCost ring_cost(Protocol p, Kind kind, const GroupShape& g)
{
  AlgorithmCost c;
  const size_t pi = size_t(p);
  const int64_t n = g.ranks, N = std::max<int64_t>(1, g.nodes), k = g.per_node();
  // Latency: (nsteps - nInterSteps) * intra + nInterSteps * inter; across nodes the intra step is at least
  // the network post overhead (1 us on Intel CPUs, x 3 for Simple: getNetOverhead), with one member per node
  // the inter step is the tree's, and Simple all-reduce across nodes is x 1.4 ("plateau effect of ring",
  // ncclTopoGetAlgoTime, compute capability 8.0 and later).
  c.latency_us = kRingBaseLatencyUs[pi];
  const int64_t steps = kind == Kind::AllReduce ? 2 * (n - 1) : n - 1;
  const int64_t inter_steps = N == 1 ? 0 : kind == Kind::AllReduce ? 2 * (N - 1) : N - 1;
  double intra = kRingNvlinkStepUs[pi];
  if (N > 1)
    intra = std::max(intra, p == Protocol::Simple ? 3.0 : 1.0);
  const double inter = k > 1 ? kRingNetStepUs[pi] : kTreeNetStepUs[pi];
  c.latency_us += double(steps - inter_steps) * intra + double(inter_steps) * inter;
  c.network_steps = inter_steps;
  if (p == Protocol::Simple && N > 1 && kind == Kind::AllReduce)
    c.latency_us *= 1.4;
  const double v = ring_volume(kind, n);
  if (N == 1) {
    c.nvlink_factor = v;
  } else if (!g.uniform) {  // one ring in group order: some edges on NVLink, some across the fabric
    c.nvlink_factor = v;
    c.nic_factor = v;
  } else {  // every node's k NICs carry one channel each, the other k - 1 channels stay on NVLink
    c.nvlink_factor = v * double(k - 1) / double(k);
    c.nic_factor = v / double(k);
  }
  return c;
}

// The chunk a channel moves per step under Simple: buffSizes[SIMPLE] / NCCL_STEPS x chunkSteps, 4 MiB / 8 x 4
// (src/init.cc DEFAULT_BUFFSIZE, src/include/device.h NCCL_STEPS, src/include/collectives.h ALLREDUCE_CHUNKSTEPS and
// ALLGATHER_CHUNKSTEPS, NCCL_STEPS / 2; reduce-scatter takes the all-gather's), the same at 2.24.3 and 5067397c.
constexpr double kSimpleChunkBytes = 2.0 * 1048576.0;

// The Simple ring as it runs (docs/validation.md, section 9). A loop moves one chunk per member on every channel
// and runs all of the collective's steps (device/all_reduce.h, all_gather.h, reduce_scatter.h: runRing's loop over
// chunks, 2(n - 1) or n - 1 steps each), so a tensor larger than a loop pays the steps once per loop, where NCCL's
// tuner charges them once. A step hands its chunk on only after the step before it has arrived (prims_simple.h:
// the wait for the peer's tail, the fence before posting), so every step of a ring that crosses nodes waits for
// its network hop: each step costs the network's step latency, hwLatencies[NET][RING][SIMPLE] (14 us; the tree's,
// also 14, with one member per node), not the NVLink step's 3.4 us the tuner charges the steps within a node.
// Measured, 4 x 8 H100 (A.3.a): the time beyond the NICs' is 13-18 us per step per loop from 128 MiB to 8 GiB.
// The extra is the run's latency less the tuner's (never below it: the tuner's x 1.4 across nodes stays).
double simple_loops_us(Kind kind, const GroupShape& g, double bytes, double tuner_latency_us)
{
  const int channels = ring_kernel_channels(g);
  if (channels == 0 || bytes <= 0)
    return 0;
  const size_t pi = size_t(Protocol::Simple);
  const int64_t n = g.ranks, k = g.per_node();
  const int64_t steps = kind == Kind::AllReduce ? 2 * (n - 1) : n - 1;
  const double loops = std::ceil(bytes / (double(channels) * double(n) * kSimpleChunkBytes));
  const double step_us = g.nodes > 1 ? (k > 1 ? kRingNetStepUs[pi] : kTreeNetStepUs[pi]) : kRingNvlinkStepUs[pi];
  const double run_us = kRingBaseLatencyUs[pi] + loops * double(steps) * step_us;
  return std::max(0.0, run_us - tuner_latency_us);  // ring_cost's latency, which predict() has just computed
}

// The all-reduce ring's LL128 chunks as the releases before 2.20.3 cut them (NVIDIA/nccl v2.19.4-1, and the same from
// v2.5.6-1, src/device/all_reduce.h runRing): a step's chunk is the tensor's share per channel and member rounded up to
// a multiple of minChunkSize, nthreads x 60 B / 2 = 19,200 B (NCCL_LL128_MAX_NTHREADS 640, ProtoLL128::calcBytePerGrain
// 60 B), and the chunks are laid chunk by chunk across the channels ("(chunk*nChannels + bid)*realChunkSize"), so below
// a loop only the first of each channel's n chunks hold data, each a whole rounded chunk. From v2.22.3-1 a chunk is the
// channel's share per member aligned to 16 B (all_reduce.h: "alignUp(divUp(remCount, nranks), 16/sizeof(T))");
// v2.20.3-1 to v2.21.x round it to 9,600 B (enqueue.cc computeCollAlignCount, NCCL_LL128_ALIGNMENT_PER_WARP 480 x 20
// warps), which no stack or curve names and dtsim does not model. A chunk of up to 38,400 B is one pass of
// prims_ll128.h GenericOp (20 warps x 1,920 B, every warp one slice), in which every warp takes its whole slice in
// before it sends it on, so the chunk crosses the ring's 2(n - 1) hops one after the other, each at the channel's share
// of the bus bandwidth: the steps carry channels x n rounded chunks where the tuner counts the tensor. Larger chunks
// take several passes, which overlap from hop to hop, and the tuner's time holds. Channels: the kernels', fewer while
// the tensor is under channels x 640 threads x 8 B (NCCL_LL128_THREAD_THRESHOLD, enqueue.cc topoGetAlgoInfo). Measured,
// 8 x A100 (A.2.a, NCCL <= 2.19.4): 4 MiB in 101.5 us, NCCL's tuner 73.8 us, this 99.0 us; the Azure log of the same
// node type (A.2.b, NCCL 2.18.5) 102.7 us. All-gather and reduce-scatter lay the rounded chunks channel by channel
// instead (all_gather.h: "bid*realChunkSize"), leaving whole channels idle; not modelled.
constexpr int kLl128BalancedChunksNccl = 22003;
constexpr double kLl128Threads = 640;
constexpr double kLl128MinChunkBytes = kLl128Threads * 60.0 / 2.0;
constexpr double kLl128PassBytes = kLl128Threads * 60.0;
constexpr double kLl128ThreadThresholdBytes = 8;

double ll128_rounded_chunks_us(Kind kind, const GroupShape& g, double bytes, double tuner_bandwidth_us)
{
  if (kind != Kind::AllReduce || !g.nccl_named_before(kLl128BalancedChunksNccl) || bytes <= 0)
    return 0;
  const int kernel_channels = ring_kernel_channels(g);
  if (kernel_channels == 0)
    return 0;
  const double channels = std::clamp(std::floor(bytes / (kLl128Threads * kLl128ThreadThresholdBytes)), 1.0,
                                     double(kernel_channels));
  const double per_chunk = channels * double(g.ranks);
  const double chunk = std::ceil(bytes / (per_chunk * kLl128MinChunkBytes)) * kLl128MinChunkBytes;
  if (chunk > kLl128PassBytes)
    return 0;
  return std::max(0.0, tuner_bandwidth_us * (per_chunk * chunk / bytes - 1.0));
}

double ring_run_latency_us(Protocol p, Kind kind, const GroupShape& g, double bytes, double tuner_latency_us,
                           double tuner_bandwidth_us)
{
  if (p == Protocol::Simple)
    return simple_loops_us(kind, g, bytes, tuner_latency_us);
  if (p == Protocol::LL128)
    return ll128_rounded_chunks_us(kind, g, bytes, tuner_bandwidth_us);
  return 0;
}

void ring_lay_flows(const std::vector<int64_t>& group, const MembersByNode& by_node, const GroupShape& g,
                    double nvlink_bytes, double nic_bytes, std::vector<Flow>& flows)
{
  const int64_t k = g.per_node();
  if (g.nodes == 1 || !g.uniform || k == 1) {
    ring_flows(group, std::max(nvlink_bytes, nic_bytes), flows);
    return;
  }
  // k channels: within a node l -> l + 1 carries k - 1 of them, local rank l's NIC carries one to the next
  // node's local rank l.
  for (size_t i = 0; i < by_node.size(); ++i) {
    const auto& members = by_node[i];
    const auto& next = by_node[(i + 1) % by_node.size()];
    ring_flows(members, nvlink_bytes, flows);
    for (int64_t l = 0; l < k; ++l)
      flows.push_back({members[size_t(l)], next[size_t(l)], nic_bytes});
  }
}

// One member per node: ring_lay_flows' single ring, every member alike.
void ring_lay_member_flows(const LoneMembers& members, const GroupShape&, double nvlink_bytes, double nic_bytes,
                           int64_t node, std::vector<Flow>& flows)
{
  ring_member_flows(members, node, std::max(nvlink_bytes, nic_bytes), flows);
}

}  // namespace

AlgorithmDef ring_algorithm()
{
  AlgorithmDef a;
  a.name = "ring";
  a.summary = "ring through every member; across nodes each node's NICs carry one channel each (NCCL ring)";
  a.applies = "every all-reduce, reduce-scatter and all-gather";
  a.applicable = ring_applicable;
  a.bandwidth_fraction = ring_fraction;
  a.bus_cap_Bps = ring_bus_cap_Bps;
  a.cost = ring_cost;
  a.run_latency_us = ring_run_latency_us;
  a.lay_flows = ring_lay_flows;
  a.lay_member_flows = ring_lay_member_flows;
  a.member_flows = [](int64_t, const GroupShape&) { return int64_t(1); };
  a.first_busiest_node = [](const GroupShape&) { return int64_t(0); };
  return a;
}

}  // namespace dtsim::collectives
