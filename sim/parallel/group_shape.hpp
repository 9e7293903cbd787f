#pragma once
/// A group of devices as the collective model sees it on a fabric: its members per scale-up domain, the links each
/// member sends on (NVLink within its domain, its share of the domain's NICs across), their route latencies, and
/// the switch tiers its routes cross. The simulation lays its collectives' flows from it (parallel/collective.hpp),
/// the search bound and `dtsim explain` price them from it: one shape for all three.
#include <cstdint>
#include <optional>
#include <vector>

#include "collectives/algorithm_registry.hpp"
#include "collectives/lone_members.hpp"
#include "parallel/fabric.hpp"
#include "parallel/placement.hpp"

namespace dtsim::collectives {

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
/// The group of every device of the job (devices 0..n-1): its shape and switch tiers, unlisted (`group` empty).
GroupLayout every_device_layout(const parallel::Placement& placement, const Fabric& f);
/// The same for evenly spaced ranks: where each sits at the same place of its own domain (the stride a multiple of
/// the devices used per domain, as a data-parallel group's under tp = the domain's size), every member is alone in its
/// domain, and the shape and switch tiers come in closed form, the group unlisted; otherwise as the list's.
GroupLayout group_layout(const parallel::StridedGroup& group, const parallel::Placement& placement, const Fabric& f);

}  // namespace dtsim::collectives
