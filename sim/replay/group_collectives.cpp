#include "replay/group_collectives.hpp"

#include <algorithm>

namespace dtsim::replay {

GroupCollectives::GroupCollectives(const parallel::DerivedPlan& plan, const parallel::Placement& placement,
                                   const collectives::Fabric& fabric, const Folding& folding, bool full)
    : plan_(plan), placement_(placement), fabric_(fabric), folding_(folding), full_(full)
{
}

Phases GroupCollectives::tp(int64_t device, const Step& st)
{
  const parallel::Coord c = placement_.coord(device);
  auto key = std::make_tuple(c.stage, full_ ? c.dp : int64_t(0), int(st.collective), st.bytes);
  auto it = tp_plans_.find(key);
  if (it != tp_plans_.end())
    return it->second;
  auto group = plan_.tp_group(c.stage, c.dp);
  auto phases = collectives::plan_collective(collectives::kind_of(st.collective), st.bytes, group, placement_, fabric_);
  // Folded: only the flows of one member, the others' use their own links. The member that sends the most (the
  // representative itself on a ring or NVLS, where all send alike; an inner link of a tree's chain) sets the time.
  // Where a flow crosses a shared link (a group across nodes on shared NICs or oversubscribed uplinks) every
  // member's flows and those of the other replicas' groups are simulated instead.
  bool shared = false;
  for (const auto& ph : phases)
    for (const auto& f : ph.flows)
      shared = shared || folding_.layout().crosses_shared_link(f.src, f.dst);
  if (!full_ && shared)
    folding_.add_shared_copies(phases, 1, false);
  if (!full_ && !shared)
    for (auto& ph : phases) {
      std::map<int64_t, double> sent;
      for (const auto& f : ph.flows)
        sent[f.src] += f.bytes;
      int64_t busiest = device;
      for (const auto& [src, bytes] : sent)
        if (bytes > sent[busiest])
          busiest = src;
      std::vector<collectives::Flow> mine;
      for (const auto& f : ph.flows)
        if (f.src == busiest)
          mine.push_back(f);
      ph.flows = std::move(mine);
    }
  Phases p = std::make_shared<const std::vector<collectives::Phase>>(std::move(phases));
  tp_plans_.emplace(key, p);
  return p;
}

Phases GroupCollectives::dp(int64_t device, collectives::Kind kind, double bytes, bool expert)
{
  const parallel::Coord c = placement_.coord(device);
  // Full fidelity: one plan per group (expert groups: expert_dp_index); folded: one per stage.
  const int64_t group_key = !full_ ? int64_t(-1) : expert ? plan_.expert_dp_index(c) : c.tp * plan_.groups.ep;
  auto key = std::make_tuple(c.stage, group_key, int(kind), bytes, expert);
  auto it = dp_plans_.find(key);
  if (it != dp_plans_.end())
    return it->second;
  // Folded, a stage whose collectives are stage 0's moved (Folding::stages_move) takes stage 0's phases, moved.
  if (!full_ && c.stage > 0 && folding_.stages_move()) {
    const int64_t by = c.stage * folding_.stage_devices();
    auto phases = *dp(device - by, kind, bytes, expert);
    for (auto& ph : phases)
      for (auto& f : ph.flows) {
        f.src += by;
        f.dst += by;
      }
    auto ptr = std::make_shared<const std::vector<collectives::Phase>>(std::move(phases));
    dp_plans_.emplace(key, ptr);
    return ptr;
  }
  // Folded, without shared links: the representative's own flows stand for every member's (fold_onto).
  std::vector<collectives::Phase> phases;
  if (!full_) {
    // The group is laid out once for all the step's collectives over it (a thousand members at frontier scale, laid
    // out from their stride, unlisted).
    auto layout = layouts_.find(key_of_group(c, expert));
    if (layout == layouts_.end())
      layout = layouts_
                   .emplace(key_of_group(c, expert),
                            expert ? collectives::group_layout(plan_.expert_dp_group(c.stage, c.dp, c.tp), placement_,
                                                               fabric_)
                                   : collectives::group_layout(plan_.dp_ranks(c.stage, c.tp), placement_, fabric_))
                   .first;
    if (folding_.fold_collective(kind, bytes, layout->second, device, 0, phases, fabric_)) {
      auto ptr = std::make_shared<const std::vector<collectives::Phase>>(std::move(phases));
      dp_plans_.emplace(key, ptr);
      return ptr;
    }
    phases.clear();
  }
  // Otherwise the representative's group plus the groups of the other TP ranks, which share the fabric.
  std::vector<int64_t> ranks;
  if (full_)
    ranks.push_back(c.tp);
  else
    for (int64_t r = 0; r < plan_.groups.tp; ++r)
      ranks.push_back(r);
  // Expert gradients go over the expert-data-parallel groups; folded, all of them (one per expert-parallel rank)
  // run at once, as they do in the cluster.
  std::vector<std::vector<int64_t>> groups;
  if (expert && full_)
    groups.push_back(plan_.expert_dp_group(c.stage, c.dp, c.tp));
  else if (expert)
    groups = plan_.expert_dp_groups(c.stage);
  else
    for (int64_t r : ranks)
      groups.push_back(plan_.dp_group(c.stage, r));
  for (const auto& g : groups)
    merge_phases(phases, collectives::plan_collective(kind, bytes, g, placement_, fabric_));
  auto ptr = std::make_shared<const std::vector<collectives::Phase>>(std::move(phases));
  dp_plans_.emplace(key, ptr);
  return ptr;
}

Phases GroupCollectives::rank_group_phases(int64_t device, collectives::Kind kind, double bytes, int64_t size,
                                         double inter_node_scale)
{
  const parallel::Coord c = placement_.coord(device);
  // Full fidelity: one plan per group and TP rank; folded: one per stage (the representative's group, with the
  // groups of the other TP ranks where it does not fold).
  const int64_t group_key = full_ ? (c.dp / size) * plan_.groups.tp + c.tp : int64_t(-1);
  std::vector<std::vector<int64_t>> groups;  // the representative's (TP rank 0) first
  for (int64_t r = 0; r < plan_.groups.tp; ++r)
    if (!full_ || r == c.tp)
      groups.push_back(placement_.rank_group(c.stage, c.dp, r, size));
  return group_phases(device, {c.stage, group_key, int(kind), bytes, size}, groups, size, kind, bytes,
                      inter_node_scale);
}

Phases GroupCollectives::group_phases(int64_t device, const GroupPlanKey& key,
                                    const std::vector<std::vector<int64_t>>& groups, int64_t dp_step,
                                    collectives::Kind kind, double bytes, double inter_node_scale)
{
  auto it = group_plans_.find(key);
  if (it != group_plans_.end())
    return it->second;
  std::vector<collectives::Phase> phases;
  if (!full_) {  // the representative's own flows stand for every member's where symmetry allows (fold_onto)
    phases = collectives::plan_collective(kind, bytes, groups.front(), placement_, fabric_, inter_node_scale);
    if (folding_.fold_onto(phases, device, dp_step)) {
      auto ptr = std::make_shared<const std::vector<collectives::Phase>>(std::move(phases));
      group_plans_.emplace(key, ptr);
      return ptr;
    }
    phases.clear();
  }
  // Folded, where the groups of other slices take other routes (Folding::asymmetry reports it) and no link is
  // shared: only the representative's groups are replayed, as the other slices' copies would run on links of their
  // own; each is folded within itself (its members alike: fold_onto without the other slices; an all-to-all across
  // domains of unequal shares: fold_all_to_all). Replayed whole, an expert all-to-all of ep members was ep (ep - 1)
  // flows: ep 64 on GB200 NVL72 racks 24 M activities a step.
  if (!full_ && !folding_.layout().has_shared_links()) {
    bool folded = true;
    for (const auto& g : groups) {
      const int64_t own = &g == &groups.front() ? device : g.front();  // another TP rank's: its first member
      auto mine = collectives::plan_collective(kind, bytes, g, placement_, fabric_, inter_node_scale);
      if (!folding_.fold_onto(mine, own, 0) &&
          !(kind == collectives::Kind::AllToAll && folding_.fold_all_to_all(mine, own))) {
        folded = false;
        break;
      }
      merge_phases(phases, std::move(mine));
    }
    if (folded) {
      auto ptr = std::make_shared<const std::vector<collectives::Phase>>(std::move(phases));
      group_plans_.emplace(key, ptr);
      return ptr;
    }
    phases.clear();
  }
  for (const auto& g : groups)
    merge_phases(phases, collectives::plan_collective(kind, bytes, g, placement_, fabric_, inter_node_scale));
  folding_.add_shared_copies(phases, dp_step, false);  // the groups of the other data-parallel slices
  auto ptr = std::make_shared<const std::vector<collectives::Phase>>(std::move(phases));
  group_plans_.emplace(key, ptr);
  return ptr;
}

Phases GroupCollectives::cp(int64_t device, collectives::Kind kind, double bytes)
{
  return rank_group_phases(device, kind, bytes, plan_.groups.cp);
}

Phases GroupCollectives::ep(int64_t device, double bytes, double inter_node_scale)
{
  const parallel::Coord c = placement_.coord(device);
  const int64_t ep = plan_.groups.ep;
  if (!plan_.groups.experts_across_tp())
    return rank_group_phases(device, collectives::Kind::AllToAll, bytes, ep, inter_node_scale);
  // The group spans the TP ranks: folded, the representative's group stands for the others, every ep / tp
  // data-parallel indices (the TP ranks are in it already). Full fidelity: one plan per group.
  const int64_t group_key = full_ ? plan_.expert_rank(c) / ep : int64_t(-1);
  return group_phases(device, {c.stage, group_key, int(collectives::Kind::AllToAll), bytes, ep},
                      {plan_.ep_group(c.stage, c.dp, c.tp)}, plan_.ep_dp_step(), collectives::Kind::AllToAll,
                      bytes, inter_node_scale);
}

void GroupCollectives::merge_phases(std::vector<collectives::Phase>& into, std::vector<collectives::Phase> more)
{
  if (into.empty()) {
    into = std::move(more);
    return;
  }
  for (size_t i = 0; i < more.size() && i < into.size(); ++i) {
    into[i].flows.insert(into[i].flows.end(), more[i].flows.begin(), more[i].flows.end());
    into[i].inter_node = into[i].inter_node || more[i].inter_node;
    into[i].latency_s = std::max(into[i].latency_s, more[i].latency_s);
  }
}

}  // namespace dtsim::replay
