#include "parallel/group_shape.hpp"

#include <algorithm>
#include <cstddef>
#include <map>

namespace dtsim::collectives {

using std::size_t;

namespace {

// The group's members per domain, domains in ascending order, members in group order. Groups are mostly listed in
// device order, so that their domains never decrease: the runs of equal domains are then the answer, found in one
// pass (a data-parallel group of 131,072 GPUs spans 16,384 domains, and a map of them cost most of a frontier step's
// set-up); otherwise a map sorts them.
MembersByNode members_by_domain(const std::vector<int64_t>& group, const parallel::Placement& placement)
{
  MembersByNode by_node;
  int64_t last = -1;
  for (int64_t d : group) {
    const int64_t domain = placement.domain_of(d);
    if (domain < last) {
      std::map<int64_t, std::vector<int64_t>> members_of_node;
      for (int64_t m : group)
        members_of_node[placement.domain_of(m)].push_back(m);
      by_node.clear();
      for (auto& [node, members] : members_of_node)
        by_node.push_back(std::move(members));
      return by_node;
    }
    if (domain != last)
      by_node.emplace_back();
    by_node.back().push_back(d);
    last = domain;
  }
  return by_node;
}

// `nodes` domains, each holding the same number of members where `uniform`, the fewest `fewest`.
GroupShape shape_of(int64_t ranks, int64_t nodes, bool uniform, int64_t fewest, const Fabric& f)
{
  GroupShape g;
  g.ranks = ranks;
  g.nodes = nodes;
  g.uniform = uniform;
  g.nvswitch_generation = f.nvswitch_generation;
  g.nvls_enabled = f.nvls_enabled;
  g.nccl_version = f.nccl_version;
  // On a mesh a device reaches each other member of its domain by its own link: RCCL's channels lay rings over
  // every pair (ROCm/rccl#1210: "maxBw 48.0 totalBw 144.0" on 4 MI300X, 3 links of 48 GB/s), so a member sends at
  // the links to the fewest other local members of any domain the group spans.
  g.nvlink_Bps = f.device_nvlink_Bps(fewest - 1);
  // A device sends across domains from its host's NIC: with fewer NICs than devices they share them.
  g.nic_Bps = f.nic_Bps * std::min(1.0, double(f.nics_per_domain) / double(std::max<int64_t>(1, f.devices_per_domain)));
  g.nvlink_latency_s = f.nvlink_latency_s;
  g.nic_latency_s = f.nic_latency_s;
  return g;
}

GroupShape shape_of(int64_t ranks, const std::vector<int64_t>& per_node, const Fabric& f)
{
  bool uniform = true;
  int64_t fewest = ranks;
  for (int64_t count : per_node) {
    uniform = uniform && count == per_node.front();
    fewest = std::min(fewest, count);
  }
  return shape_of(ranks, int64_t(per_node.size()), uniform, fewest, f);
}

}  // namespace

GroupShape group_shape(const std::vector<int64_t>& group, const parallel::Placement& placement, const Fabric& f)
{
  return shape_of(int64_t(group.size()), placement.members_per_domain(group), f);
}

GroupShape every_device_shape(const parallel::Placement& placement, const Fabric& f)
{
  // Devices 0..n-1 fill their domains in order (the job's domains map onto the cluster's in increasing order): every
  // domain holds devices_per_domain of them but the last, which holds the rest.
  const int64_t n = placement.devices(), per_domain = placement.devices_per_domain(), rest = n % per_domain;
  return shape_of(n, placement.domains(), rest == 0 || n < per_domain, rest == 0 ? std::min(n, per_domain) : rest, f);
}

GroupLayout every_device_layout(const parallel::Placement& placement, const Fabric& f)
{
  GroupLayout l;
  l.shape = every_device_shape(placement, f);
  l.switches = f.routes.switches_spanned_by_every_device(placement);
  return l;
}

GroupLayout group_layout(const std::vector<int64_t>& group, const parallel::Placement& placement, const Fabric& f)
{
  GroupLayout l;
  l.group = group;
  l.by_node = members_by_domain(group, placement);
  std::vector<int64_t> per_node;
  for (const auto& members : l.by_node)
    per_node.push_back(int64_t(members.size()));
  l.shape = shape_of(int64_t(group.size()), per_node, f);
  l.switches = f.routes.switches_spanned(group, placement);
  l.alone = l.by_node.size() == group.size();
  for (size_t x = 1; x < group.size() && l.alone; ++x)
    l.alone = group[x - 1] < group[x];
  return l;
}

GroupLayout group_layout(const parallel::StridedGroup& group, const parallel::Placement& placement, const Fabric& f)
{
  // Each member at the same place of its own domain: one member per domain, domains ascending with the devices.
  if (group.count < 2 || group.stride <= 0 || group.stride % placement.devices_per_domain() != 0)
    return group_layout(group.list(), placement, f);
  GroupLayout l;
  l.shape = shape_of(group.count, group.count, true, 1, f);
  l.switches = f.routes.switches_spanned(group, placement);
  l.alone = true;
  l.strided = group;
  return l;
}

}  // namespace dtsim::collectives
