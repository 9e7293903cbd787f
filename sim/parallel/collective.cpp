#include "parallel/collective.hpp"

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>

#include "parallel/all_to_all.hpp"

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
    ph.flows = all_to_all_flows(bytes, group, placement, inter_node_scale);
    ph.inter_node = std::any_of(ph.flows.begin(), ph.flows.end(), [&](const Flow& f) {
      return placement.domain_of(f.src) != placement.domain_of(f.dst);
    });
    phases.push_back(std::move(ph));
    return phases;
  }
  return plan_collective(kind, bytes, group_layout(group, placement, fabric), placement, fabric);
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

namespace {

// The rule: NCCL's predicted time on the group's shape, plus the latency of the switch tiers its routes cross.
double time_with_tiers(Kind kind, double bytes, const GroupShape& g, int switches, const Fabric& fabric)
{
  if (g.ranks < 2 || bytes <= 0 || kind == Kind::AllToAll)
    return 0;
  const Prediction pr = choose(kind, bytes, g, fabric.choice);
  return pr.time_s + tier_latency_s(pr, switches, fabric);
}

}  // namespace

double collective_time(Kind kind, double bytes, const GroupLayout& layout, const Fabric& fabric)
{
  return time_with_tiers(kind, bytes, layout.shape, layout.switches, fabric);
}

double collective_time(Kind kind, double bytes, const std::vector<int64_t>& group,
                       const parallel::Placement& placement, const Fabric& fabric)
{
  if (group.size() < 2 || bytes <= 0 || kind == Kind::AllToAll)
    return 0;
  // The shape and switch tiers group_layout would find, without listing each domain's members: a frontier job's
  // data-parallel group has a thousand, and the search's bound prices every plan's.
  return time_with_tiers(kind, bytes, group_shape(group, placement, fabric),
                         fabric.routes.switches_spanned(group, placement), fabric);
}

}  // namespace dtsim::collectives
