// NCCL's NVLS (NVLink SHARP): within one node the NVSwitch reduces and multicasts, in chunks.
#include <algorithm>

#include "collectives/algorithm_parts.hpp"

namespace dtsim::collectives {

namespace {

// NCCL's tuner, NVIDIA/nccl src/graph/tuning.cc at 5067397c (ncclTunerConstantsDefaults), NVLS column: Simple
// only (ncclTopoTuneModel skips LL and LL128 for it), baseLatencies 0, hwLatencies[NVLINK] 25 us.
constexpr double kNvlsNvlinkStepUs = 25;

// How NCCL cuts the tensor (NVIDIA/nccl at 5067397c): over nvls_channels() channels of at most kNvlsMaxHeads heads
// each (algorithm_parts.hpp), one head per GPU of the node. Chunk: NCCL_NVLS_CHUNKSIZE 128 KiB (nvls.cc), cut to 64 KiB
// below 64 chunks per head of every channel, 32 KiB below 8, 16 KiB below 2 (src/enqueue.cc, calcCollChunking, NVLS
// branch).
constexpr double kDefaultChunkBytes = 128 * 1024;

// Each chunk of each head waits once for the switch's reduction and multicast to complete before the next goes:
// 6.7 us a chunk, fitted on one curve (8 x H100, NCCL_ALGO=NVLS, 2 MiB to 8 GiB: reference collectives-and-kernels.md
// A.1.b; scripts/fit_nvls_chunk_wait.py) and checked on two others (A.1.a, A.1.d; the same script prints them).
// At NCCL's default chunk it leaves 0.88 of the links' goodput, where NCCL's tuner takes nvlsEfficiency 0.85.
constexpr double kChunkWaitUs = 6.7;

double chunk_bytes(double bytes, double streams)
{
  double c = kDefaultChunkBytes;
  if (bytes < 64 * streams * c)
    c = 65536;
  if (bytes < 8 * streams * c)
    c = 32768;
  if (bytes < 2 * streams * c)
    c = 16384;
  return c;
}

bool nvls_applicable(Protocol p, Kind kind, const GroupShape& g)
{
  return p == Protocol::Simple && kind == Kind::AllReduce && g.nodes == 1 && nvls_node(g);
}

// The switch's efficiency comes from the chunks (nvls_size_effect), not from a tuner factor.
double nvls_fraction(Protocol, Kind, const GroupShape&) { return 1.0; }

AlgorithmCost nvls_cost(Protocol, Kind, const GroupShape& g)
{
  AlgorithmCost c;
  c.latency_us = kNvlsNvlinkStepUs;
  c.nvlink_factor = 1.0 + 1.0 / double(g.ranks);
  return c;
}

// The tensor flows as streams of chunks (channels x heads), each stream at its share of the links: a chunk costs
// its transfer plus the wait, so the links run at chunk / (chunk + wait x stream rate), and the first chunk's
// round is paid before the streams are full.
SizeEffect nvls_size_effect(Protocol, Kind, const GroupShape& g, double bytes)
{
  const double channels = double(nvls_channels(g));
  const double streams = channels * double(std::min(g.ranks, kNvlsMaxHeads));
  const double stream_Bps = g.nvlink_Bps / (1.0 + 1.0 / double(g.ranks)) / streams;
  const double chunk = chunk_bytes(bytes, streams);
  const double wait_bytes = kChunkWaitUs * 1e-6 * stream_Bps;
  SizeEffect e;
  e.fraction = chunk / (chunk + wait_bytes);
  e.latency_us = (chunk + wait_bytes) / stream_Bps * 1e6;
  return e;
}

// Each device's link carries S(1 + 1/n) each way: a ring of flows loads them alike.
void nvls_lay_flows(const std::vector<int64_t>& group, const MembersByNode&, const GroupShape&, double nvlink_bytes,
                    double, std::vector<Flow>& flows)
{
  ring_flows(group, nvlink_bytes, flows);
}

}  // namespace

AlgorithmDef nvls_algorithm()
{
  AlgorithmDef a;
  a.name = "nvls";
  a.summary = "NVLink SHARP: the NVSwitch reduces and multicasts, each GPU sends and receives S(1 + 1/n) (NCCL NVLS)";
  a.applies = "all-reduce within one node of NVSwitch generation 3 or later";
  a.applicable = nvls_applicable;
  a.bandwidth_fraction = nvls_fraction;
  a.cost = nvls_cost;
  a.size_effect = nvls_size_effect;
  a.lay_flows = nvls_lay_flows;
  return a;
}

}  // namespace dtsim::collectives
