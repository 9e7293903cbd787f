// NCCL's PAT (Parallel Aggregated Trees, NCCL 2.23 and later): all-gather and reduce-scatter over one GPU per node in
// log2(nodes) exchanges with the ranks 1, 2, 4, ... away, whose latency grows with the logarithm of the node count
// where the ring's grows linearly.
#include <algorithm>

#include "collectives/algorithm_parts.hpp"

namespace dtsim::collectives {

namespace {

// The NCCL releases, as NCCL_VERSION_CODE (major * 10000 + minor * 100 + patch): PAT came with 2.23.4 (tag v2.23.4-1
// of NVIDIA/nccl, 2024-09-10: src/graph/tuning.cc ncclPatEnable, the PAT rows of ncclTopoTuneModel), and 2.24.3
// lowered its bus bandwidth factor from .85 to .75 (the same line of ncclTopoTuneModel at tag v2.24.3-1).
constexpr int kFirstNccl = 22304;
constexpr int kFactorLoweredNccl = 22403;

// NCCL's tuner, NVIDIA/nccl src/graph/tuning.cc, ncclTopoTuneModel, the PAT branch (the same from v2.23.4-1 to
// 5067397c, 2.30.7): latency = 8 us + log2i(nNodes) x interLat / 3.5 + nRanks x 2.8 us ("still a linear part"),
// interLat with one GPU per node the tree's network step under Simple, hwLatencies[NET][TREE][SIMPLE] 14 us.
constexpr double kPatBaseLatencyUs = 8.0;
constexpr double kPatNetStepUs = 14.0;
constexpr double kLogStepDivisor = 3.5;
constexpr double kPerRankUs = 2.8;

// ncclPatEnable (tuning.cc): only with one GPU per node (nNodes == nRanks) and the network run by the host proxy
// (no device offload, as every dtsim fabric); ncclTopoTuneModel: reduce-scatter and all-gather only, Simple only.
// NCCL 2.26 also asks compute capability 6.0 (CUDA atomics), which every GPU dtsim models has. The kernels' limit,
// ncclPatShmem's 32 dimensions (src/include/collectives.h: "Should cover 2^32 ranks"), binds no group dtsim runs.
bool pat_applicable(Protocol p, Kind kind, const GroupShape& g)
{
  return g.nccl_version >= kFirstNccl && p == Protocol::Simple &&
         (kind == Kind::ReduceScatter || kind == Kind::AllGather) && g.nodes == g.ranks;
}

// tuning.cc, "Various model refinements": PAT busBw * .85 (2.23), * .75 (2.24 on).
double pat_fraction(Protocol, Kind, const GroupShape& g) { return g.nccl_version >= kFactorLoweredNccl ? 0.75 : 0.85; }

AlgorithmCost pat_cost(Protocol, Kind, const GroupShape& g)
{
  AlgorithmCost c;
  const int64_t N = std::max<int64_t>(1, g.nodes);
  c.network_steps = log2i(N);
  c.latency_us =
      kPatBaseLatencyUs + double(c.network_steps) * kPatNetStepUs / kLogStepDivisor + double(g.ranks) * kPerRankUs;
  // The tuner prices PAT's bus bandwidth as its algorithm bandwidth (ncclTopoTuneModel converts bus to algorithm
  // bandwidth only for the ring among reduce-scatter and all-gather algorithms): the whole tensor over each NIC,
  // where the ring has (n - 1) / n of it.
  c.nic_factor = 1.0;
  return c;
}

// Each rank sends and receives (n - 1) / n of the tensor, as on the ring; PAT's partners are 1, 2, 4, ... ranks away,
// and the fabric's cost of crossing its tiers is priced per network step (AlgorithmCost::network_steps). The flows:
// one per rank to the next, each of the NIC's bytes, which loads every NIC as PAT does.
void pat_lay_flows(const std::vector<int64_t>& group, const MembersByNode&, const GroupShape&, double,
                   double nic_bytes, std::vector<Flow>& flows)
{
  ring_flows(group, nic_bytes, flows);
}

void pat_lay_member_flows(const LoneMembers& members, const GroupShape&, double, double nic_bytes, int64_t node,
                          std::vector<Flow>& flows)
{
  ring_member_flows(members, node, nic_bytes, flows);
}

}  // namespace

AlgorithmDef pat_algorithm()
{
  AlgorithmDef a;
  a.name = "pat";
  a.summary = "exchanges with the ranks 1, 2, 4, ... away, log2(nodes) network steps (NCCL PAT, 2.23 and later)";
  a.applies = "reduce-scatter and all-gather with one member per node, Simple, NCCL 2.23 and later (stack key nccl)";
  a.applicable = pat_applicable;
  a.bandwidth_fraction = pat_fraction;
  a.cost = pat_cost;
  a.lay_flows = pat_lay_flows;
  a.lay_member_flows = pat_lay_member_flows;
  a.member_flows = [](int64_t, const GroupShape&) { return int64_t(1); };
  a.first_busiest_node = [](const GroupShape&) { return int64_t(0); };
  return a;
}

}  // namespace dtsim::collectives
