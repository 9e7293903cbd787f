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
#include "parallel/fabric_routes.hpp"
#include "parallel/placement.hpp"
#include "scenario/scenario_spec.hpp"

namespace dtsim::collectives {

/// The collective a layer's collective runs as. The context-parallel ring moves an all-gather's traffic in forward
/// (ContextGather) and an all-reduce's in backward (ContextGatherReduce), see model/ops.hpp.
Kind kind_of(model::TpCollective c);

/// The links collectives run on, and what the hardware or stack forces.
struct Fabric {
  double nvlink_Bps = 0;         ///< goodput of a device's NVLink, per direction
  double nvlink_latency_s = 0;   ///< route latency between two devices of a scale-up domain
  double nic_Bps = 0;            ///< goodput of a NIC, per direction
  double nic_latency_s = 0;      ///< route latency between two NICs
  int64_t nics_per_domain = 1, devices_per_domain = 1;  ///< of one scale-up (NVLink) domain
  int nvswitch_generation = 0;
  bool nvls_enabled = true;  ///< false where the hardware turns NVLS off (hardware::ScaleUpSpec::nvls)
  /// No switch: `nvlink_Bps` is one per-pair link of a mesh (hardware::ScaleUpSpec::full_mesh)
  bool full_mesh = false;
  CollectiveChoice choice;
  int nccl_version = 0;  ///< the stack's NCCL (GroupShape::nccl_version)
  /// The switch tiers a group's traffic crosses: each network step pays the switch latency per switch beyond the
  /// first (NCCL's per-step network latency stands for a route through one switch).
  parallel::FabricRoutes routes;
  /// Static ECMP: the factor the most loaded uplink stretches the flows that cross a leaf by (1: adaptive routing).
  double ecmp_slowdown = 1;
};

struct Phase {
  double latency_s = 0;     ///< delay before the flows start
  bool inter_node = false;  ///< whether some flows cross the NICs
  const AlgorithmDef* algorithm = nullptr;  ///< the registry's entry (none for an all-to-all)
  Protocol protocol = Protocol::Simple;
  std::vector<Flow> flows;
};

/// The fabric of a scenario: its hardware's links at their goodput (times the stack's communication factor, which
/// set_stack_factors folds into the goodputs) and the algorithm and protocol the stack, else the hardware, forces.
Fabric fabric_of(const scenario::ScenarioSpec& s);

/// The group's shape on this fabric (members per domain in group order). NCCL's "nodes" are scale-up domains: on a
/// multi-node NVLink system (MNNVL) it fuses the topologies of every rank of a clique into one node (NVIDIA/nccl
/// src/graph/topo.cc, ncclTopoGetSystem, "MNNVL clique support", at 5067397c) and counts NVLink domains as nodes
/// (src/init.cc, initNvlDomainInfo: nNvlDomains = nNodes), so its rings, trees and NVLS run within a rack as
/// within a DGX.
GroupShape group_shape(const std::vector<int64_t>& group, const parallel::Placement& placement, const Fabric& f);
/// The shape of the group of every device of the job (devices 0..n-1), without listing them: a frontier job's
/// 131,072 devices.
GroupShape every_device_shape(const parallel::Placement& placement, const Fabric& f);

/// A group with its members per domain, its shape and the switch tiers it spans on fabric `f`, found once for the
/// several collectives planned over it on that fabric (a data-parallel group of a frontier job has a thousand
/// members); the collectives may force another algorithm or protocol (Fabric::choice), not other links or routes.
struct GroupLayout {
  std::vector<int64_t> group;  ///< devices in ring order (empty where `strided` stands for them)
  MembersByNode by_node;       ///< members per domain, domains ascending, members in group order (empty likewise)
  GroupShape shape;
  int switches = 0;            ///< the switch tiers its routes cross (parallel::FabricRoutes::switches_spanned)
  /// Every member alone in its domain, the group listed in ascending order: node k holds member k
  /// (plan_busiest_member).
  bool alone = false;
  /// Laid out from its stride without listing it (group_layout of a StridedGroup): its members are these.
  std::optional<parallel::StridedGroup> strided;
  /// The members node by node, where `alone`.
  LoneMembers lone_members() const
  {
    return strided ? LoneMembers(strided->first, strided->stride, strided->count) : LoneMembers(group);
  }
};
GroupLayout group_layout(const std::vector<int64_t>& group, const parallel::Placement& placement, const Fabric& f);
/// The same for evenly spaced ranks: where each sits at the same place of its own domain (the stride a multiple of
/// the devices used per domain, as a data-parallel group's under tp = the domain's size), every member is alone in its
/// domain, and the shape and switch tiers come in closed form, the group unlisted; otherwise as the list's.
GroupLayout group_layout(const parallel::StridedGroup& group, const parallel::Placement& placement, const Fabric& f);

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

/// NCCL's predicted time of the collective the replay would run (registry's choice), without contention, with the
/// latency of the switch tiers its group crosses (parallel/fabric_routes.hpp).
double collective_time(Kind kind, double bytes, const std::vector<int64_t>& group,
                       const parallel::Placement& placement, const Fabric& fabric);
/// The same over a group laid out by group_layout.
double collective_time(Kind kind, double bytes, const GroupLayout& layout, const Fabric& fabric);
/// The same on a group of shape `g`, whose switch tiers are not known: NCCL's model alone.
double collective_time(Kind kind, double bytes, const GroupShape& g, const Fabric& fabric);

}  // namespace dtsim::collectives
