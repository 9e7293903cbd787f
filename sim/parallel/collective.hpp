#pragma once
/// Collectives as a phase of concurrent flows plus a latency term: the bandwidth term comes out of the platform's
/// links (and their contention), the latency is NCCL's model for the algorithm and protocol chosen
/// (algorithm_registry.hpp), paid as a delay in front of the flows (the flows pay their route latency themselves).
/// Each algorithm's flows load every link with what NCCL's algorithm moves over it, divided by the fraction of
/// the link's goodput that the protocol achieves: on an uncontended fabric a phase lasts exactly the registry's
/// predicted time. It sits with the plan (sim/parallel) because it needs the placement of a group; it keeps the
/// namespace of the algorithm catalog it uses (sim/collectives, a lower layer that the hardware and stack readers
/// take their names from).
#include <cstdint>
#include <optional>
#include <vector>

#include "collectives/algorithm_registry.hpp"
#include "model/ops.hpp"
#include "parallel/fabric.hpp"
#include "parallel/group_shape.hpp"
#include "parallel/placement.hpp"

namespace dtsim::collectives {

/// The collective a layer's collective runs as. The context-parallel ring moves an all-gather's traffic in forward
/// (ContextGather) and an all-reduce's in backward (ContextGatherReduce), see model/ops.hpp.
Kind kind_of(model::TpCollective c);

struct Phase {
  double latency_s = 0;     ///< delay before the flows start
  bool inter_node = false;  ///< whether some flows cross the NICs
  const AlgorithmDef* algorithm = nullptr;  ///< the registry's entry (none for an all-to-all)
  Protocol protocol = Protocol::Simple;
  std::vector<Flow> flows;
};

/// Phases of a collective of `bytes` (the whole tensor) over `group` (devices in ring order). AllToAll only:
/// `inter_node_scale` multiplies the bytes of the flows between nodes (node-limited expert routing,
/// model/node_limited_routing.hpp).
std::vector<Phase> plan_collective(Kind kind, double bytes, const std::vector<int64_t>& group,
                                   const parallel::Placement& placement, const Fabric& fabric,
                                   double inter_node_scale = 1.0);
/// The same over a group laid out by group_layout (not an all-to-all).
std::vector<Phase> plan_collective(Kind kind, double bytes, const GroupLayout& layout,
                                   const parallel::Placement& placement, const Fabric& fabric);

/// A collective's phases with only one member's flows: those of the member that moves the most.
struct BusiestPlan {
  std::vector<Phase> phases;  ///< as plan_collective's, each with only the busiest member's flows (sent and received)
  int64_t busiest = 0;        ///< that member
};
/// The phases of plan_collective(kind, bytes, layout, ...) with only the flows of its busiest member, found without
/// laying every member's flows: where every member is alone in its domain, the fabric neither spreads flows over a
/// mesh nor stretches them (ECMP), and the algorithm chosen lays one member's flows (AlgorithmDef::lay_member_flows).
/// Every flow then crosses domains with the same bytes, so a member moves its flows' count times them: the busiest
/// is `member` where it moves as much as any, else the first member in device order that moves the most (the choice
/// replay::Folding::fold_onto makes on the whole set). nullopt where this does not apply. Cost: one pass over the
/// group's domains, not its flows.
std::optional<BusiestPlan> plan_busiest_member(Kind kind, double bytes, const GroupLayout& layout,
                                               const parallel::Placement& placement, const Fabric& fabric,
                                               int64_t member);

/// NCCL's predicted time of the collective the replay would run over a laid-out group (registry's choice), without
/// contention, with the latency of the switch tiers its group crosses (parallel/fabric_routes.hpp): the replay's
/// flows take exactly this alone on their links (tests/unit/collective_test.cpp). Not for an all-to-all
/// (parallel/all_to_all.hpp).
double collective_time(Kind kind, double bytes, const GroupLayout& layout, const Fabric& fabric);
/// The same over `group` (devices in ring order): its shape and switch tiers as group_layout finds them.
double collective_time(Kind kind, double bytes, const std::vector<int64_t>& group,
                       const parallel::Placement& placement, const Fabric& fabric);

}  // namespace dtsim::collectives
