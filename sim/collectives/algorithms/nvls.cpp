// NCCL's NVLS (NVLink SHARP): within one node the NVSwitch reduces and multicasts.
#include "collectives/algorithm_parts.hpp"

namespace dtsim::collectives {

namespace {

// NCCL's tuner, NVIDIA/nccl src/graph/tuning.cc at 5067397c (ncclTunerConstantsDefaults), NVLS column: Simple
// only (ncclTopoTuneModel skips LL and LL128 for it), baseLatencies 0, hwLatencies[NVLINK] 25 us.
constexpr double kNvlinkStepUs = 25;

bool nvls_applicable(Protocol p, Kind kind, const GroupShape& g)
{
  return p == Protocol::Simple && kind == Kind::AllReduce && g.nodes == 1 && nvls_node(g);
}

double nvls_fraction(Protocol, const GroupShape& g) { return nvls_efficiency(g); }

AlgorithmCost nvls_cost(Protocol, Kind, const GroupShape& g)
{
  AlgorithmCost c;
  c.latency_us = kNvlinkStepUs;
  c.nvlink_factor = 1.0 + 1.0 / double(g.ranks);
  return c;
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
  a.lay_flows = nvls_lay_flows;
  return a;
}

}  // namespace dtsim::collectives
