#include "parallel/collective.hpp"

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>

namespace dtsim::collectives {

Kind kind_of(model::TpCollective c)
{
  switch (c) {
    case model::TpCollective::ReduceScatter: return Kind::ReduceScatter;
    case model::TpCollective::AllGather: return Kind::AllGather;
    case model::TpCollective::AllToAll: return Kind::AllToAll;
    case model::TpCollective::ContextGather: return Kind::AllGather;
    default: return Kind::AllReduce;  // AllReduce, ContextGatherReduce (None moves nothing)
  }
}

using std::size_t;

Fabric fabric_of(const scenario::ScenarioSpec& s)
{
  Fabric f;
  const auto& hw = s.hardware;
  f.nvlink_Bps = hw.scale_up.nvlink.goodput_Bps;
  f.nvlink_latency_s = hw.scale_up.nvlink.latency_s;
  f.nic_Bps = hw.network.nic.goodput_Bps;
  f.nic_latency_s = hw.network.nic.latency_s;
  f.nics_per_domain = hw.domain_nics();
  f.devices_per_domain = hw.domain_devices();
  f.nvswitch_generation = hw.scale_up.nvswitch_generation;
  f.nvls_enabled = hw.scale_up.nvls;
  f.full_mesh = hw.scale_up.full_mesh;
  f.choice.algorithm = !s.stack.collective_algorithm.empty() ? s.stack.collective_algorithm : hw.collectives.algorithm;
  f.choice.protocol = !s.stack.collective_protocol.empty() ? s.stack.collective_protocol : hw.collectives.protocol;
  f.nccl_version = s.stack.nccl_version;
  f.routes = parallel::FabricRoutes(hw);
  const auto& par = s.parallel;
  f.ecmp_slowdown = parallel::ecmp_ring_slowdown(
      hw, parallel::Placement(par.dp_cp(), par.tp, par.pp, parallel::devices_used_per_domain(hw.domain_devices(), par.tp)));
  return f;
}

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

// The members per domain alone, domains in ascending order, the same way.
std::vector<int64_t> count_by_domain(const std::vector<int64_t>& group, const parallel::Placement& placement)
{
  std::vector<int64_t> counts;
  int64_t last = -1;
  for (int64_t d : group) {
    const int64_t domain = placement.domain_of(d);
    if (domain < last) {
      counts.clear();
      for (const auto& members : members_by_domain(group, placement))
        counts.push_back(int64_t(members.size()));
      return counts;
    }
    if (domain != last)
      counts.push_back(0);
    ++counts.back();
    last = domain;
  }
  return counts;
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
  g.nvlink_Bps = f.full_mesh ? f.nvlink_Bps * double(std::max<int64_t>(1, fewest - 1)) : f.nvlink_Bps;
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
  return shape_of(int64_t(group.size()), count_by_domain(group, placement), f);
}

GroupShape every_device_shape(const parallel::Placement& placement, const Fabric& f)
{
  // Devices 0..n-1 fill their domains in order (the job's domains map onto the cluster's in increasing order): every
  // domain holds devices_per_domain of them but the last, which holds the rest.
  const int64_t n = placement.devices(), per_domain = placement.devices_per_domain(), rest = n % per_domain;
  return shape_of(n, placement.domains(), rest == 0 || n < per_domain, rest == 0 ? std::min(n, per_domain) : rest, f);
}

namespace {

// On a switchless mesh RCCL runs its channels' rings over different pairs of devices, so that each device sends
// on all its links at once: the bytes an algorithm sends from one device to another of its domain are shared
// equally among every other member of the group in that domain, each share on its own per-pair link.
void spread_over_mesh(const MembersByNode& by_node, const parallel::Placement& placement, std::vector<Flow>& flows)
{
  std::map<int64_t, const std::vector<int64_t>*> local;  // domain -> the group's members there
  for (const auto& members : by_node)
    local[placement.domain_of(members.front())] = &members;
  std::vector<Flow> spread;
  for (const Flow& f : flows) {
    const int64_t domain = placement.domain_of(f.src);
    const auto& members = *local.at(domain);
    if (placement.domain_of(f.dst) != domain || members.size() <= 2) {
      spread.push_back(f);
      continue;
    }
    const double share = f.bytes / double(members.size() - 1);
    for (int64_t peer : members)
      if (peer != f.src)
        spread.push_back({f.src, peer, share});
  }
  flows = std::move(spread);
}

// The switch latency a collective across `nodes` domains pays beyond NCCL's network constants (which stand for a
// route through one switch): per switch beyond the first that its group's routes cross, on each network step.
double tier_latency_s(const Prediction& pr, int switches, const Fabric& fabric)
{
  if (switches <= 1 || fabric.routes.switch_latency_s() <= 0)
    return 0;
  return double(pr.network_steps) * double(switches - 1) * fabric.routes.switch_latency_s();
}

// What the switch tiers add to a phase across domains: their latency, and under static ECMP the busiest uplink's
// slowdown of every flow that leaves its leaf, as more bytes at the link's rate (parallel/fabric_routes.hpp).
void add_fabric_costs(const Prediction& pr, const GroupLayout& layout, const parallel::Placement& placement,
                      const Fabric& fabric, Phase& ph)
{
  const auto& routes = fabric.routes;
  ph.latency_s += tier_latency_s(pr, layout.switches, fabric);
  if (fabric.ecmp_slowdown <= 1)
    return;
  for (Flow& f : ph.flows)
    if (placement.domain_of(f.src) != placement.domain_of(f.dst) &&
        routes.leaf_of_nic(routes.nic_of(f.src, placement)) != routes.leaf_of_nic(routes.nic_of(f.dst, placement)))
      f.bytes *= fabric.ecmp_slowdown;
}

}  // namespace

std::vector<Phase> plan_collective(Kind kind, double bytes, const std::vector<int64_t>& group,
                                   const parallel::Placement& placement, const Fabric& fabric,
                                   double inter_node_scale)
{
  std::vector<Phase> phases;
  if (group.size() < 2 || bytes <= 0)
    return phases;
  if (kind == Kind::AllToAll) {
    Phase ph;  // every pair at once: one latency, paid by the flows
    const double share = bytes / double(group.size());
    for (int64_t a : group)
      for (int64_t b : group)
        if (a != b) {
          const bool across = placement.domain_of(a) != placement.domain_of(b);
          ph.flows.push_back({a, b, across ? share * inter_node_scale : share});
          ph.inter_node = ph.inter_node || across;
        }
    phases.push_back(std::move(ph));
    return phases;
  }
  return plan_collective(kind, bytes, group_layout(group, placement, fabric), placement, fabric);
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

namespace {

// The phase of a collective over a laid-out group (of two or more members, bytes > 0) without its flows, and the
// bytes its algorithm lays over the busiest NVLink and NIC.
Phase phase_without_flows(const Prediction& pr, double bytes, const GroupLayout& layout, const Fabric& fabric,
                          double& nvl_bytes, double& nic_bytes)
{
  const GroupShape& g = layout.shape;
  Phase ph;
  ph.algorithm = pr.algorithm;
  ph.protocol = pr.protocol;
  ph.inter_node = g.nodes > 1;
  nvl_bytes = pr.nvlink_factor * bytes;
  nic_bytes = pr.nic_factor * bytes;
  // The flows pay their route's latency: the slower link's flows end the phase, so theirs is taken off NCCL's.
  const double nvl_s = g.nvlink_Bps > 0 ? nvl_bytes / g.nvlink_Bps : 0.0;
  const double nic_s = g.nic_Bps > 0 ? nic_bytes / g.nic_Bps : 0.0;
  const bool nic_bound = g.nodes > 1 && (nic_s >= nvl_s || nvl_bytes <= 0);
  ph.latency_s = std::max(0.0, pr.latency_s - (nic_bound ? fabric.nic_latency_s : fabric.nvlink_latency_s));
  return ph;
}

}  // namespace

std::vector<Phase> plan_collective(Kind kind, double bytes, const GroupLayout& layout,
                                   const parallel::Placement& placement, const Fabric& fabric)
{
  std::vector<Phase> phases;
  if (layout.strided)  // every member's flows: the group listed
    return plan_collective(kind, bytes, group_layout(layout.strided->list(), placement, fabric), placement, fabric);
  const auto& group = layout.group;
  const auto& by_node = layout.by_node;
  const GroupShape& g = layout.shape;
  if (group.size() < 2 || bytes <= 0)
    return phases;
  const Prediction pr = choose(kind, bytes, g, fabric.choice);
  double nvl_bytes = 0, nic_bytes = 0;
  Phase ph = phase_without_flows(pr, bytes, layout, fabric, nvl_bytes, nic_bytes);
  pr.algorithm->lay_flows(group, by_node, g, nvl_bytes, nic_bytes, ph.flows);
  if (fabric.full_mesh)
    spread_over_mesh(by_node, placement, ph.flows);
  if (g.nodes > 1)
    add_fabric_costs(pr, layout, placement, fabric, ph);
  phases.push_back(std::move(ph));
  return phases;
}

std::optional<BusiestPlan> plan_busiest_member(Kind kind, double bytes, const GroupLayout& layout,
                                               const parallel::Placement& placement, const Fabric& fabric,
                                               int64_t member)
{
  const GroupShape& g = layout.shape;
  // Every member alone in its domain (so every flow crosses domains); no mesh spreading and no ECMP stretch, which
  // would change flows after they are laid.
  if (kind == Kind::AllToAll || g.ranks < 2 || bytes <= 0 || !layout.alone || fabric.full_mesh ||
      fabric.ecmp_slowdown > 1)
    return std::nullopt;
  const Prediction pr = choose(kind, bytes, g, fabric.choice);
  const AlgorithmDef& a = *pr.algorithm;
  if (a.lay_member_flows == nullptr || a.member_flows == nullptr || a.first_busiest_node == nullptr)
    return std::nullopt;
  // `member`'s node: node k holds member k (GroupLayout::alone).
  const LoneMembers members = layout.lone_members();
  const int64_t own = members.node_of(member);
  if (own < 0)
    return std::nullopt;
  double nvl_bytes = 0, nic_bytes = 0;
  BusiestPlan out;
  Phase ph = phase_without_flows(pr, bytes, layout, fabric, nvl_bytes, nic_bytes);
  // Every flow has the same bytes and crosses domains, so a member's bytes sent (and received) are its flows times
  // those bytes: the member itself where it sends as many as the busiest, else the first busiest in device order.
  const int64_t first = a.first_busiest_node(g);
  const int64_t node = a.member_flows(own, g) >= a.member_flows(first, g) ? own : first;
  out.busiest = members[node];
  a.lay_member_flows(members, g, nvl_bytes, nic_bytes, node, ph.flows);
  if (g.nodes > 1)
    add_fabric_costs(pr, layout, placement, fabric, ph);
  out.phases.push_back(std::move(ph));
  return out;
}

double collective_time(Kind kind, double bytes, const std::vector<int64_t>& group,
                       const parallel::Placement& placement, const Fabric& fabric)
{
  if (group.size() < 2 || bytes <= 0 || kind == Kind::AllToAll)
    return 0;
  const GroupShape g = group_shape(group, placement, fabric);
  const Prediction pr = choose(kind, bytes, g, fabric.choice);
  return pr.time_s + tier_latency_s(pr, fabric.routes.switches_spanned(group, placement), fabric);
}

double collective_time(Kind kind, double bytes, const GroupLayout& layout, const Fabric& fabric)
{
  if (layout.shape.ranks < 2 || bytes <= 0 || kind == Kind::AllToAll)
    return 0;
  const Prediction pr = choose(kind, bytes, layout.shape, fabric.choice);
  return pr.time_s + tier_latency_s(pr, layout.switches, fabric);
}

double collective_time(Kind kind, double bytes, const GroupShape& g, const Fabric& fabric)
{
  if (g.ranks < 2 || bytes <= 0 || kind == Kind::AllToAll)
    return 0;
  return choose(kind, bytes, g, fabric.choice).time_s;
}

}  // namespace dtsim::collectives
