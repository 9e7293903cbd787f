#include "replay/folding.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <set>
#include <tuple>
#include <utility>

namespace dtsim::replay {

Folding::Folding(const parallel::DerivedPlan& plan, const parallel::Placement& placement,
                 const hardware::HardwareSpec& hw, const collectives::Fabric& fabric, bool full)
    : plan_(plan), layout_(hw, placement), fabric_(fabric), full_(full)
{
}

collectives::Flow Folding::copy_of(const collectives::Flow& f, int64_t dp_shift, int64_t tp_shift) const
{
  const int64_t dp = plan_.groups.dense_dp, tp = plan_.groups.tp;
  const auto a = placement().coord(f.src), b = placement().coord(f.dst);
  return {placement().device({a.stage, (a.dp + dp_shift) % dp, (a.tp + tp_shift) % tp}),
          placement().device({b.stage, (b.dp + dp_shift) % dp, (b.tp + tp_shift) % tp}), f.bytes};
}

std::vector<collectives::Flow> Folding::shared_copies(const collectives::Flow& f, int64_t dp_step, bool tp_ranks) const
{
  std::vector<collectives::Flow> out;
  if (full_ || !layout_.has_shared_links())
    return out;
  const int64_t dp = plan_.groups.dense_dp, tp = plan_.groups.tp;
  for (int64_t sd = 0; sd < dp; sd += dp_step > 0 ? dp_step : dp)
    for (int64_t st = 0; st < (tp_ranks ? tp : 1); ++st) {
      if (sd == 0 && st == 0)
        continue;
      auto c = copy_of(f, sd, st);
      if (layout_.crosses_shared_link(c.src, c.dst))
        out.push_back(c);
    }
  return out;
}

bool Folding::copies_alike(const std::vector<collectives::Flow>& flows, int64_t dp_step, bool tp_ranks) const
{
  std::vector<int64_t> key{dp_step, tp_ranks ? 1 : 0};  // the same flows are asked about once per collective kind
  for (const auto& f : flows) {
    key.push_back(f.src);
    key.push_back(f.dst);
  }
  if (auto it = alike_.find(key); it != alike_.end())
    return it->second;
  const bool alike = check_copies_alike(flows, dp_step, tp_ranks);
  alike_.emplace(std::move(key), alike);
  return alike;
}

// Compares, shift by shift, the multiset of the copies' signatures with the originals': a member's pattern of flows
// (an all-to-all: so many peers in its node, so many across) may map onto another member's in another order.
bool Folding::check_copies_alike(const std::vector<collectives::Flow>& flows, int64_t dp_step, bool tp_ranks) const
{
  const int64_t dp = plan_.groups.dense_dp, tp = plan_.groups.tp;
  const bool shared = layout_.has_shared_links();
  std::map<int64_t, int64_t> load;  // flows of the whole set on each shared link
  if (shared)
    for (int64_t sd = 0; sd < dp; sd += dp_step > 0 ? dp_step : dp)
      for (int64_t st = 0; st < (tp_ranks ? tp : 1); ++st)
        for (const auto& f : flows) {
          const auto c = copy_of(f, sd, st);
          for (int64_t l : layout_.shared_links(c.src, c.dst))
            ++load[l];
        }
  // Within a node or across, the bytes, and the loads of the shared links crossed.
  auto signature = [&](const collectives::Flow& f) {
    std::vector<double> sig{layout_.same_domain(f.src, f.dst) ? 0.0 : 1.0, f.bytes};
    if (shared) {
      const size_t own = sig.size();
      for (int64_t l : layout_.shared_links(f.src, f.dst))
        sig.push_back(double(load[l]));
      std::sort(sig.begin() + std::ptrdiff_t(own), sig.end());
    }
    return sig;
  };
  auto pattern = [&](int64_t sd, int64_t st) {
    std::vector<std::vector<double>> out;
    for (const auto& f : flows)
      out.push_back(signature(copy_of(f, sd, st)));
    std::sort(out.begin(), out.end());
    return out;
  };
  // Without shared links a copy's signature is only whether it stays in its domain, and its bytes, and moving every
  // device of a copy by a multiple of the domain size keeps that. Two data-parallel shifts sd1, sd2 with the same TP
  // shift move each device by the same (sd2 - sd1) * tp, unless one wraps a device's data-parallel index past dp and
  // the other does not. So shifts with the same TP shift, the same sd * tp modulo the domain size and the same
  // devices wrapped have the same pattern, and one of each is compared: the check no longer grows with dp.
  const bool movable = !shared && moves_keep_domains();
  std::vector<int64_t> wrap_at;  // a device of data-parallel index a wraps from the shift dp - a on
  for (const auto& f : flows)
    for (int64_t d : {f.src, f.dst})
      wrap_at.push_back(dp - placement().coord(d).dp);
  std::sort(wrap_at.begin(), wrap_at.end());
  wrap_at.erase(std::unique(wrap_at.begin(), wrap_at.end()), wrap_at.end());
  const int64_t per_domain = placement().devices_per_domain(), wraps = int64_t(wrap_at.size()) + 1;
  auto wrapped = [&](int64_t sd) {
    return int64_t(std::upper_bound(wrap_at.begin(), wrap_at.end(), sd) - wrap_at.begin());
  };
  std::vector<char> compared(movable ? size_t(tp * per_domain * wraps) : 0, 0);  // by (st, sd * tp % domain, wraps)
  auto seen = [&](int64_t sd, int64_t st) {
    if (!movable)
      return false;
    char& c = compared[size_t((st * per_domain + sd * tp % per_domain) * wraps + wrapped(sd))];
    return std::exchange(c, char(1)) != 0;
  };
  seen(0, 0);
  const auto original = pattern(0, 0);
  // Between two wrap thresholds, sd * tp % domain repeats every `period` shifts: the rest of such a stretch is
  // skipped, so the shifts compared are at most period x (thresholds + 1), whatever dp.
  const int64_t step = dp_step > 0 ? dp_step : dp;
  const int64_t period = per_domain / std::gcd(step * tp, per_domain);
  for (int64_t sd = 0, in_stretch = 0; sd < dp;) {
    for (int64_t st = 0; st < (tp_ranks ? tp : 1); ++st)
      if ((sd != 0 || st != 0) && !seen(sd, st) && pattern(sd, st) != original)
        return false;
    int64_t next = sd + step;
    if (movable && ++in_stretch >= period) {
      const auto threshold = std::upper_bound(wrap_at.begin(), wrap_at.end(), sd);
      if (threshold == wrap_at.end())
        break;
      next = std::max(next, (*threshold + step - 1) / step * step);  // the first shift that wraps one more
    }
    if (wrapped(next) != wrapped(sd))
      in_stretch = 0;
    sd = next;
  }
  return true;
}

bool Folding::moves_keep_domains() const
{
  // place_on requires as many increasing cluster domains as the job has: a cluster of the job's size is its own.
  return placement().cluster_size() == placement().domains();
}

std::vector<int64_t> Folding::needed_devices() const
{
  const auto& p = plan_.groups;
  if (full_ || layout_.has_shared_links())
    return {};
  // A list, sorted at the end, not a mask over the devices: a frontier step needs a few hundred of 131,072.
  std::vector<int64_t> need;
  auto mark = [&](const std::vector<int64_t>& devices) { need.insert(need.end(), devices.begin(), devices.end()); };
  // Where stages move (stages_move), what stage 0 needs of its data-parallel groups, the costliest part (it grows
  // with dp), is moved to the other stages instead of computed again.
  std::vector<int64_t> first_marks;
  for (int64_t st = 0; st < p.pp; ++st) {
    mark(plan_.tp_group(st, 0));  // the representative, its TP group, and the other stages' representatives
    for (int64_t r = 0; r < p.tp && p.cp > 1; ++r)
      mark(plan_.cp_group(st, 0, r));
    for (int64_t r = 0; r < p.tp && p.ep > 1; ++r)
      mark(plan_.ep_group(st, 0, r));
    if (st > 0 && stages_move()) {
      for (int64_t d : first_marks)
        need.push_back(d + st * stage_devices());
      continue;
    }
    const auto marks = data_parallel_needs(st);
    mark(marks);
    if (st == 0)
      first_marks = marks;
  }
  std::sort(need.begin(), need.end());
  need.erase(std::unique(need.begin(), need.end()), need.end());
  return need;
}

bool Folding::stages_move() const
{
  return moves_keep_domains() && stage_devices() % placement().devices_per_domain() == 0;
}

std::vector<int64_t> Folding::data_parallel_needs(int64_t st) const
{
  const auto& p = plan_.groups;
  std::vector<int64_t> out;
  auto mark = [&](const std::vector<int64_t>& devices) { out.insert(out.end(), devices.begin(), devices.end()); };
  // Which flows fold_onto keeps depends on the algorithm and the protocol (their bytes per link), not on the size,
  // so every pair NCCL may choose covers every collective of the step. The flows an algorithm lays depend on its
  // bytes per link alone (its factors), and many choices come to the same (a forced algorithm that cannot run falls
  // back to the ring): each is laid and folded once, over the group laid out once.
  for (bool expert : {false, true}) {
    if (expert && p.ep <= 1)
      continue;
    // A data-parallel group is laid out from its stride: a frontier stage's thousand ranks are not listed.
    const auto layout = expert ? collectives::group_layout(plan_.expert_dp_group(st, 0, 0), placement(), fabric_)
                               : collectives::group_layout(plan_.dp_ranks(st, 0), placement(), fabric_);
    if (layout.shape.ranks < 2)
      continue;
    bool all = false;
    std::set<std::tuple<const collectives::AlgorithmDef*, double, double>> laid;
    for (auto kind : {collectives::Kind::AllReduce, collectives::Kind::ReduceScatter, collectives::Kind::AllGather})
      for (const auto& a : collectives::algorithms())
        for (const auto& pr : collectives::protocols()) {
          auto fabric = fabric_;
          fabric.choice = {a.name, pr.name};
          const auto chosen = collectives::choose(kind, 1 << 20, layout.shape, fabric.choice);
          if (!laid.emplace(chosen.algorithm, chosen.nvlink_factor, chosen.nic_factor).second)
            continue;
          std::vector<collectives::Phase> phases;
          if (!fold_collective(kind, 1 << 20, layout, placement().device({st, 0, 0}), 0, phases, fabric)) {
            all = true;
            continue;
          }
          for (const auto& ph : phases)
            for (const auto& f : ph.flows)
              mark({f.src, f.dst});
        }
    for (int64_t r = 0; r < p.tp && all && !expert; ++r)  // dp_phases runs every TP rank's groups
      mark(plan_.dp_group(st, r));
    if (all && expert)
      for (const auto& g : plan_.expert_dp_groups(st))
        mark(g);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string Folding::asymmetry(const std::set<std::pair<int64_t, int64_t>>& pipeline_pairs,
                               bool embedding_sync) const
{
  if (full_)
    return "";
  const auto& p = plan_.groups;
  const std::string exact = "; simulation.fidelity: full replays every device and is exact";
  // What folding assumed where groups differ and another pipeline than rank order's first crosses domains most
  // (Placement::represent_slowest_pipeline); said only then, so that DGX-style records keep their words.
  const int64_t rep = placement().representative_pipeline();
  const std::string replayed = rep == 0 ? "" : "; the pipeline replayed (" + std::to_string(rep) + " of " +
                                                   std::to_string(placement().dp()) +
                                                   ") is the one whose groups cross NVLink domains most, which the "
                                                   "step waits for";
  // Pipeline transfers: every pair of stages that exchanges activations.
  for (const auto& [a, b] : pipeline_pairs) {
    const int64_t src = placement().device({a, 0, 0}), dst = placement().device({b, 0, 0});
    if (!copies_alike({{src, dst, 1.0}}, 1, true))
      return "folding may be approximate: the ranks of stage " + std::to_string(a) +
             " send their activations to stage " + std::to_string(b) +
             " over routes that differ from rank to rank (within a node or across, or more " +
             "transfers on a shared NIC or oversubscribed uplink)" + exact;
  }
  if (p.pp > 1 && embedding_sync) {
    const int64_t a = placement().device({0, 0, 0}), b = placement().device({p.pp - 1, 0, 0});
    if (!copies_alike({{a, b, 1.0}, {b, a, 1.0}}, 1, true))
      return "folding may be approximate: the embedding all-reduce of the first and last stage takes routes that "
             "differ from rank to rank" + exact;
  }
  for (int64_t st = 0; st < p.pp; ++st) {
    auto ring_flows = [&](const std::vector<int64_t>& g) {
      std::vector<collectives::Flow> out;
      for (size_t i = 0; i < g.size() && g.size() > 1; ++i)
        out.push_back({g[i], g[(i + 1) % g.size()], 1.0});
      return out;
    };
    using Group = std::tuple<bool, int64_t, const char*>;  // experts, size, what
    for (const auto& [experts, size, what] :
         {Group{true, p.ep, "expert-parallel all-to-all"}, Group{false, p.cp, "context-parallel ring"}}) {
      if (size <= 1)
        continue;
      std::vector<collectives::Flow> flows;
      const bool across = experts && plan_.groups.experts_across_tp();  // one group holds every TP rank
      for (int64_t r = 0; r < (across ? 1 : p.tp); ++r) {
        auto g = experts ? plan_.ep_group(st, 0, r) : plan_.cp_group(st, 0, r);
        auto more = ring_flows(g);
        if (experts)  // every pair exchanges tokens
          for (int64_t x : g)
            for (int64_t y : g)
              if (x != y)
                more.push_back({x, y, 1.0});
        flows.insert(flows.end(), more.begin(), more.end());
      }
      if (!copies_alike(flows, across ? plan_.ep_dp_step() : size, false))
        return "folding may be approximate: the " + std::string(what) + " groups of stage " + std::to_string(st) +
               " take routes that differ from group to group" + replayed + exact;
    }
    auto tp_flows = ring_flows(plan_.tp_group(st, 0));
    if (!copies_alike(tp_flows, 1, false))
      return "folding may be approximate: the tensor-parallel groups of stage " + std::to_string(st) +
             " take routes that differ from group to group" + replayed + exact;
  }
  return "";
}

void Folding::add_shared_copies(std::vector<collectives::Phase>& phases, int64_t dp_step, bool tp_ranks) const
{
  for (auto& ph : phases) {
    const size_t own = ph.flows.size();
    for (size_t i = 0; i < own; ++i) {
      auto more = shared_copies(ph.flows[i], dp_step, tp_ranks);
      ph.flows.insert(ph.flows.end(), more.begin(), more.end());
    }
  }
}

bool Folding::fold_onto(std::vector<collectives::Phase>& phases, int64_t device, int64_t dp_step) const
{
  if (full_ || layout_.has_shared_links())
    return false;
  std::vector<std::vector<collectives::Flow>> folded;
  for (const auto& ph : phases) {
    // Bytes each member sends and receives, within its node and across, summed in the flows' order (a flow's
    // sender before its receiver); then the members ascending. A row per member as it first appears, found through a
    // table over the devices the flows span (a stage's at most): groups of a thousand, several times a step, where a
    // sort of every flow's ends cost most of a frontier step.
    int64_t lo = 0, hi = -1;
    for (const auto& f : ph.flows) {
      lo = hi < lo ? std::min(f.src, f.dst) : std::min({lo, f.src, f.dst});
      hi = std::max({hi, f.src, f.dst});
    }
    if (rows_.size() < size_t(hi - lo + 1))
      rows_.resize(size_t(hi - lo + 1), -1);
    std::vector<std::pair<int64_t, std::array<double, 4>>> load;  // by member, ascending once sorted
    auto add = [&](int64_t member, int kind, double bytes) {
      int32_t& r = rows_[size_t(member - lo)];
      if (r < 0) {
        r = int32_t(load.size());
        load.push_back({member, {0, 0, 0, 0}});
      }
      load[size_t(r)].second[size_t(kind)] += bytes;
    };
    for (const auto& f : ph.flows) {
      const bool across = !layout_.same_domain(f.src, f.dst);
      add(f.src, across ? 1 : 0, f.bytes);
      add(f.dst, across ? 3 : 2, f.bytes);
    }
    for (const auto& m : load)  // the table back to unused, for the next phase
      rows_[size_t(m.first - lo)] = -1;
    auto by_member = [](const auto& a, const auto& b) { return a.first < b.first; };
    if (!std::is_sorted(load.begin(), load.end(), by_member))  // a ring in device order already is
      std::sort(load.begin(), load.end(), by_member);
    auto total = [](const std::array<double, 4>& l) { return l[0] + l[1] + l[2] + l[3]; };
    // The busiest: the device itself if none moves more, else the first member (ascending) that moves the most.
    const auto own = std::lower_bound(load.begin(), load.end(), device,
                                      [](const auto& m, int64_t d) { return m.first < d; });
    const std::array<double, 4> none{0, 0, 0, 0};
    int64_t busiest = device;
    std::array<double, 4> most = own != load.end() && own->first == device ? own->second : none;
    for (const auto& [member, l] : load)
      if (total(l) > total(most)) {
        busiest = member;
        most = l;
      }
    // Every member moves no more than the busiest, kind by kind, so its flows end no later (ring, all-to-all: all
    // alike; a tree: the busiest node of both trees).
    for (const auto& [member, l] : load)
      for (size_t k = 0; k < 4; ++k)
        if (l[k] > most[k] * (1 + 1e-12))
          return false;
    std::vector<collectives::Flow> theirs, mine;
    for (const auto& f : ph.flows)
      if (f.src == busiest || f.dst == busiest)
        theirs.push_back(f);
    if (!move_onto(theirs, busiest, device, dp_step, mine))
      return false;
    folded.push_back(std::move(mine));
  }
  for (size_t i = 0; i < phases.size(); ++i)
    phases[i].flows = std::move(folded[i]);
  return true;
}

bool Folding::fold_all_to_all(std::vector<collectives::Phase>& phases, int64_t device) const
{
  if (full_ || layout_.has_shared_links() || phases.size() != 1)
    return false;
  auto& flows = phases[0].flows;
  // Each member's bytes sent within its domain and across, received within and across.
  std::map<int64_t, std::array<double, 4>> load;
  for (const auto& f : flows) {
    const bool across = !layout_.same_domain(f.src, f.dst);
    load[f.src][across ? 1 : 0] += f.bytes;
    load[f.dst][across ? 3 : 2] += f.bytes;
  }
  // One member per load: the device for its own, otherwise the first (ascending).
  std::map<std::array<double, 4>, int64_t> kept;
  if (auto own = load.find(device); own != load.end())
    kept.emplace(own->second, device);
  for (const auto& [member, l] : load)
    kept.emplace(l, member);
  std::set<int64_t> members;
  for (const auto& [l, member] : kept)
    members.insert(member);
  std::vector<collectives::Flow> mine;
  for (const auto& f : flows)
    if (members.count(f.src) > 0 || members.count(f.dst) > 0)
      mine.push_back(f);
  flows = std::move(mine);
  return true;
}

bool Folding::move_onto(const std::vector<collectives::Flow>& theirs, int64_t busiest, int64_t device,
                        int64_t dp_step, std::vector<collectives::Flow>& mine) const
{
  const auto rep = placement().coord(device), b = placement().coord(busiest);
  if (b.stage != rep.stage)
    return false;
  const int64_t dp = plan_.groups.dense_dp, tp = plan_.groups.tp;
  const int64_t dp_shift = ((rep.dp - b.dp) % dp + dp) % dp, tp_shift = ((rep.tp - b.tp) % tp + tp) % tp;
  mine.clear();
  for (const auto& f : theirs)
    mine.push_back(copy_of(f, dp_shift, tp_shift));
  // A flow's kind and size, for comparing members' patterns.
  auto pattern = [&](const std::vector<collectives::Flow>& flows) {
    std::vector<std::pair<bool, double>> out;
    for (const auto& f : flows)
      out.push_back({layout_.same_domain(f.src, f.dst), f.bytes});
    std::sort(out.begin(), out.end());
    return out;
  };
  // Moved onto the device, the flows keep their kinds; and the groups of the other TP ranks (and, every dp_step
  // data-parallel indices, of the other slices), which the device also stands for, take routes alike.
  return pattern(mine) == pattern(theirs) && copies_alike(mine, dp_step, true);
}

bool Folding::fold_collective(collectives::Kind kind, double bytes, const collectives::GroupLayout& group,
                              int64_t device, int64_t dp_step, std::vector<collectives::Phase>& phases,
                              const collectives::Fabric& fabric) const
{
  // Where the algorithm lays one member's flows (collectives::plan_busiest_member), fold_onto's busiest member and
  // its flows come without laying the others': the same phases, as its tests check against fold_onto's.
  if (!full_ && !layout_.has_shared_links())
    if (auto plan = collectives::plan_busiest_member(kind, bytes, group, placement(), fabric, device)) {
      std::vector<collectives::Flow> mine;
      if (plan->phases.size() == 1 && move_onto(plan->phases[0].flows, plan->busiest, device, dp_step, mine)) {
        plan->phases[0].flows = std::move(mine);
        phases = std::move(plan->phases);
        return true;
      }
    }
  phases = collectives::plan_collective(kind, bytes, group, placement(), fabric);
  return fold_onto(phases, device, dp_step);
}

// The representative's NVLink links carry its tensor-parallel flows only when the group sits in one
// scale-up domain, pipeline neighbours and the embedding pair are in other domains, and data-parallel groups have
// one member per domain (no phase within a domain).
bool Folding::nvlink_exclusive_to_tp(bool embedding_sync) const
{
  const auto& p = plan_.groups;
  if (p.tp > placement().devices_per_domain())
    return false;
  // Where stages move by whole domains (stages_move), each stage's data-parallel group sits in its domains as stage
  // 0's does: stage 0's answers for all (a frontier stage's group has 1,024 ranks).
  const bool moved = stages_move();
  for (int64_t st = 0; st < p.pp; ++st) {
    auto group = plan_.tp_group(st, 0);
    if (placement().domain_of(group.front()) != placement().domain_of(group.back()))
      return false;
    if (st + 1 < p.pp && layout_.same_domain(placement().device({st, 0, 0}), placement().device({st + 1, 0, 0})))
      return false;
    if (p.cp > 1) {  // nor the context-parallel ring
      auto cpg = plan_.cp_group(st, 0, 0);
      for (size_t i = 1; i < cpg.size(); ++i)
        if (layout_.same_domain(cpg[0], cpg[i]))
          return false;
    }
    if (p.ep > 1) {  // expert all-to-alls must not share the representative's NVLink links either
      auto epg = plan_.ep_group(st, 0, 0);
      for (size_t i = 1; i < epg.size(); ++i)
        if (layout_.same_domain(epg[0], epg[i]))
          return false;
    }
    // Ranks a whole number of domains apart never share one (a frontier stage's thousand, unlisted).
    if (p.dp > 1 && (st == 0 || !moved) && plan_.dp_ranks(st, 0).stride % placement().devices_per_domain() != 0) {
      auto dpg = plan_.dp_group(st, 0);
      for (size_t i = 1; i < dpg.size(); ++i)
        if (layout_.same_domain(dpg[i - 1], dpg[i]))
          return false;
    }
  }
  if (p.pp > 1 && embedding_sync &&
      layout_.same_domain(placement().device({0, 0, 0}), placement().device({p.pp - 1, 0, 0})))
    return false;
  return true;
}

}  // namespace dtsim::replay
