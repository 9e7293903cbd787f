#include "collectives/collective.hpp"

#include <cstddef>
#include <map>

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

namespace {

double ring_factor(Kind k, int64_t n)  // bytes each rank sends, per byte of the tensor
{
  double f = double(n - 1) / double(n);
  return k == Kind::AllReduce ? 2 * f : f;
}

int64_t ring_steps(Kind k, int64_t n)
{
  if (k == Kind::AllToAll)  // not a ring: all pairs at once
    return 1;
  return k == Kind::AllReduce ? 2 * (n - 1) : n - 1;
}

Phase ring_phase(Kind kind, double bytes, const std::vector<int64_t>& ring, bool inter_node)
{
  Phase ph;
  const int64_t n = int64_t(ring.size());
  ph.steps = ring_steps(kind, n);
  ph.inter_node = inter_node;
  for (int64_t i = 0; i < n; ++i)
    ph.flows.push_back({ring[size_t(i)], ring[size_t((i + 1) % n)], bytes * ring_factor(kind, n)});
  return ph;
}

}  // namespace

std::vector<Phase> plan_collective(Kind kind, double bytes, const std::vector<int64_t>& group,
                                   const parallel::Placement& placement, double inter_node_scale)
{
  std::vector<Phase> phases;
  if (group.size() < 2 || bytes <= 0)
    return phases;
  if (kind == Kind::AllToAll) {
    Phase ph;
    ph.steps = 1;  // every pair at once: one latency, paid by the flows
    const double share = bytes / double(group.size());
    for (int64_t a : group)
      for (int64_t b : group)
        if (a != b) {
          const bool across = placement.node_of(a) != placement.node_of(b);
          ph.flows.push_back({a, b, across ? share * inter_node_scale : share});
          ph.inter_node = ph.inter_node || across;
        }
    phases.push_back(std::move(ph));
    return phases;
  }
  // members per node, in group order
  std::map<int64_t, std::vector<int64_t>> by_node;
  for (int64_t d : group)
    by_node[placement.node_of(d)].push_back(d);
  const int64_t nodes = int64_t(by_node.size());
  const size_t k = by_node.begin()->second.size();
  bool uniform = true;
  for (const auto& [node, members] : by_node)
    uniform = uniform && members.size() == k;
  if (nodes == 1 || k == 1 || !uniform) {
    phases.push_back(ring_phase(kind, bytes, group, nodes > 1));
    return phases;
  }
  // Hierarchical: intra-node reduce-scatter, inter-node rings of the 1/k shards, intra-node all-gather.
  auto intra = [&](Kind kd) {
    Phase ph;
    ph.steps = ring_steps(kd, int64_t(k));
    for (const auto& [node, members] : by_node) {
      Phase one = ring_phase(kd, bytes, members, false);
      ph.flows.insert(ph.flows.end(), one.flows.begin(), one.flows.end());
    }
    return ph;
  };
  Phase cross;
  cross.inter_node = true;
  for (size_t local = 0; local < k; ++local) {
    std::vector<int64_t> ring;
    for (const auto& [node, members] : by_node)
      ring.push_back(members[local]);
    Phase one = ring_phase(kind, bytes / double(k), ring, true);
    cross.steps = one.steps;
    cross.flows.insert(cross.flows.end(), one.flows.begin(), one.flows.end());
  }
  if (kind != Kind::AllGather)
    phases.push_back(intra(Kind::ReduceScatter));
  phases.push_back(cross);
  if (kind != Kind::ReduceScatter)
    phases.push_back(intra(Kind::AllGather));
  return phases;
}

double ring_time(Kind kind, double bytes, int64_t n, double alpha_s, double beta_Bps)
{
  if (n < 2)
    return 0;
  return double(ring_steps(kind, n)) * alpha_s + ring_factor(kind, n) * bytes / beta_Bps;
}

}  // namespace dtsim::collectives

