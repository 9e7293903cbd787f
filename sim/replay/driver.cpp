#include "replay/driver.hpp"

#include <algorithm>
#include <array>
#include <set>

namespace dtsim::replay {

Driver::Driver(Activities& acts, const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan,
               const StepProgram& prog, const parallel::PipelineSchedule& sched, bool trace, const ClusterSlot* slot)
    : acts_(acts), s_(s), plan_(plan), prog_(prog), sched_(sched), placement_(slot ? slot->placement : plan.placement),
      layout_(s.hardware, placement_), fabric_(collectives::fabric_of(s)), trace_(trace)
{
  full_ = s.fidelity == scenario::Fidelity::Full;
  start_t_ = slot ? slot->start_t : 0.0;
  const int64_t units = int64_t(boost::num_vertices(sched.graph));
  recv_from_.assign(size_t(units), -1);
  send_to_.assign(size_t(units), -1);
  for (auto [e, end] = boost::edges(sched.graph); e != end; ++e) {
    if (sched.graph[*e].kind != parallel::EdgeKind::Data)
      continue;
    UnitId a = boost::source(*e, sched.graph), b = boost::target(*e, sched.graph);
    if (sched.graph[a].stage != sched.graph[b].stage) {
      recv_from_[b] = int64_t(a);
      send_to_[a] = int64_t(b);
    }
  }
  // Simulated devices: all of them, or one representative (dp 0, tp 0) per stage.
  for (int64_t d = 0; d < placement_.devices(); ++d) {
    auto c = placement_.coord(d);
    if (full_ || (c.dp == 0 && c.tp == 0)) {
      Device dev;
      dev.id = d;
      dev.coord = c;
      dev.replica = full_ ? c.dp * plan.groups.tp + c.tp : 0;
      dev.free_t = start_t_;
      index_of_[d] = devices_.size();
      devices_.push_back(std::move(dev));
    }
  }
  if (slot == nullptr) {
    own_platform_ = std::make_unique<platform::ClusterPlatform>(s.hardware, placement_, needed_devices());
    platform_ = own_platform_.get();
  }
  const int64_t replicas = full_ ? plan.groups.dense_dp * plan.groups.tp : 1;
  arrivals_.assign(size_t(replicas * units), Arrival{});
  transfers_.assign(size_t(replicas * units), Transfer{});
  setup_buckets();
  tp_exclusive_ = !full_ && nvlink_exclusive_to_tp();
  folding_note_ = folding_asymmetry();
}

// In folded mode the representative's NVLink links carry its tensor-parallel flows only when the group sits in one
// node, pipeline neighbours and the embedding pair are in other nodes, and data-parallel groups have one member
// per node (no intra-node phase).
bool Driver::nvlink_exclusive_to_tp() const
{
  const auto& p = plan_.groups;
  if (p.tp > s_.hardware.node.devices)
    return false;
  for (int64_t st = 0; st < p.pp; ++st) {
    auto group = plan_.tp_group(st, 0);
    if (placement_.node_of(group.front()) != placement_.node_of(group.back()))
      return false;
    if (st + 1 < p.pp && layout_.same_node(placement_.device({st, 0, 0}), placement_.device({st + 1, 0, 0})))
      return false;
    if (p.cp > 1) {  // nor the context-parallel ring
      auto cpg = plan_.cp_group(st, 0, 0);
      for (size_t i = 1; i < cpg.size(); ++i)
        if (layout_.same_node(cpg[0], cpg[i]))
          return false;
    }
    if (p.ep > 1) {  // expert all-to-alls must not share the representative's NVLink links either
      auto epg = plan_.ep_group(st, 0, 0);
      for (size_t i = 1; i < epg.size(); ++i)
        if (layout_.same_node(epg[0], epg[i]))
          return false;
    }
    if (p.dp > 1) {
      auto dpg = plan_.dp_group(st, 0);
      for (size_t i = 1; i < dpg.size(); ++i)
        if (layout_.same_node(dpg[i - 1], dpg[i]))
          return false;
    }
  }
  if (p.pp > 1 && prog_.embedding_sync_bytes > 0 &&
      layout_.same_node(placement_.device({0, 0, 0}), placement_.device({p.pp - 1, 0, 0})))
    return false;
  return true;
}

void Driver::start()
{
  if (plan_.comm.param_gather_overlap)
    for (size_t i = 0; i < devices_.size(); ++i) {
      issue_refresh_gathers(i);
      pump_dp(i);
    }
  for (size_t i = 0; i < devices_.size(); ++i)
    next_unit(i);
}

std::vector<int64_t> Driver::needed_cluster_devices() const
{
  std::vector<int64_t> out;
  const auto need = needed_devices();
  for (int64_t d = 0; d < placement_.devices(); ++d)
    if (need.empty() || need[size_t(d)] != 0)
      out.push_back(placement_.cluster_device(d));
  return out;
}

ReplayResult Driver::finish()
{
  ReplayResult r;
  for (const auto& d : devices_)
    r.step_time_s = std::max(r.step_time_s, d.done_t - start_t_);
  std::vector<bool> seen(size_t(plan_.groups.pp), false);
  r.per_stage.resize(size_t(plan_.groups.pp));
  for (auto& d : devices_) {
    d.b.bubble_s += r.step_time_s - (d.done_t - start_t_);  // finished early: waits for the slowest device
    r.average += d.b;
    if (!seen[size_t(d.coord.stage)]) {
      seen[size_t(d.coord.stage)] = true;
      r.per_stage[size_t(d.coord.stage)] = d.b;
    }
  }
  r.average /= double(devices_.size());
  r.simulated_devices = int64_t(devices_.size());
  r.folding_note = folding_note_;
  r.activities = acts_.count();
  r.links = platform_->link_count();
  r.trace = trace_.take();
  return r;
}

// ---- activities ----------------------------------------------------------------------------------------
void Driver::exec_on(sg4::Host* host, double seconds, std::function<void()> fn)
{
  acts_.exec(host, seconds, std::move(fn));
}

void Driver::flow(int64_t src, int64_t dst, double bytes, std::function<void()> fn)
{
  const auto g = flow_segment(src, dst, bytes);
  acts_.flow(g.a, g.b, g.amount, g.latency_s, std::move(fn));
}

Activities::Segment Driver::flow_segment(int64_t src, int64_t dst, double bytes)
{
  // Within a node over NVLink, across nodes from NIC to NIC.
  bool local = layout_.same_node(src, dst);
  const int64_t a_at = placement_.cluster_device(src), b_at = placement_.cluster_device(dst);
  auto* a = local ? platform_->gpu(a_at) : platform_->nic(a_at);
  auto* b = local ? platform_->gpu(b_at) : platform_->nic(b_at);
  // A device's route to itself has no link and no latency, as SimGrid's comms had it.
  return {Activities::Segment::Kind::Flow, a, b, bytes, a == b ? 0.0 : platform_->route_latency(local)};
}

collectives::Flow Driver::copy_of(const collectives::Flow& f, int64_t dp_shift, int64_t tp_shift) const
{
  const int64_t dp = plan_.groups.dense_dp, tp = plan_.groups.tp;
  const auto a = placement_.coord(f.src), b = placement_.coord(f.dst);
  return {placement_.device({a.stage, (a.dp + dp_shift) % dp, (a.tp + tp_shift) % tp}),
          placement_.device({b.stage, (b.dp + dp_shift) % dp, (b.tp + tp_shift) % tp}), f.bytes};
}

std::vector<collectives::Flow> Driver::shared_copies(const collectives::Flow& f, int64_t dp_step, bool tp_ranks) const
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

bool Driver::copies_alike(const std::vector<collectives::Flow>& flows, int64_t dp_step, bool tp_ranks) const
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
bool Driver::check_copies_alike(const std::vector<collectives::Flow>& flows, int64_t dp_step, bool tp_ranks) const
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
    std::vector<double> sig{layout_.same_node(f.src, f.dst) ? 0.0 : 1.0, f.bytes};
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
  const auto original = pattern(0, 0);
  for (int64_t sd = 0; sd < dp; sd += dp_step > 0 ? dp_step : dp)
    for (int64_t st = 0; st < (tp_ranks ? tp : 1); ++st)
      if ((sd != 0 || st != 0) && pattern(sd, st) != original)
        return false;
  return true;
}

std::vector<char> Driver::needed_devices() const
{
  const auto& p = plan_.groups;
  if (full_ || layout_.has_shared_links())
    return {};
  std::vector<char> need(size_t(placement_.devices()), 0);
  auto mark = [&](const std::vector<int64_t>& devices) {
    for (int64_t d : devices)
      need[size_t(d)] = 1;
  };
  for (int64_t st = 0; st < p.pp; ++st) {
    mark(plan_.tp_group(st, 0));  // the representative, its TP group, and the other stages' representatives
    for (int64_t r = 0; r < p.tp && p.cp > 1; ++r)
      mark(plan_.cp_group(st, 0, r));
    for (int64_t r = 0; r < p.tp && p.ep > 1; ++r)
      mark(plan_.ep_group(st, 0, r));
    // Data parallel: which flows fold_onto keeps depends on the algorithm and the protocol (their bytes per link),
    // not on the size, so every pair NCCL may choose covers every collective of the step.
    for (bool expert : {false, true}) {
      if (expert && p.ep <= 1)
        continue;
      const auto group = expert ? plan_.expert_dp_group(st, 0, 0) : plan_.dp_group(st, 0);
      bool all = false;
      for (auto kind : {collectives::Kind::AllReduce, collectives::Kind::ReduceScatter, collectives::Kind::AllGather})
        for (const auto& a : collectives::algorithms())
          for (const auto& pr : collectives::protocols()) {
            auto fabric = fabric_;
            fabric.choice = {a.name, pr.name};
            auto phases = collectives::plan_collective(kind, 1 << 20, group, placement_, fabric);
            if (!fold_onto(phases, placement_.device({st, 0, 0}), 0)) {
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
  }
  return need;
}

std::string Driver::folding_asymmetry() const
{
  if (full_)
    return "";
  const auto& p = plan_.groups;
  const std::string exact = "; simulation.fidelity: full replays every device and is exact";
  // Pipeline transfers: every pair of stages that exchanges activations.
  std::set<std::pair<int64_t, int64_t>> pairs;
  for (size_t u = 0; u < recv_from_.size(); ++u)
    if (recv_from_[u] >= 0)
      pairs.insert({sched_.graph[UnitId(recv_from_[u])].stage, sched_.graph[UnitId(u)].stage});
  for (const auto& [a, b] : pairs) {
    const int64_t src = placement_.device({a, 0, 0}), dst = placement_.device({b, 0, 0});
    if (!copies_alike({{src, dst, 1.0}}, 1, true))
      return "folding may be approximate: the ranks of stage " + std::to_string(a) + " send their activations to stage " +
             std::to_string(b) + " over routes that differ from rank to rank (within a node or across, or more " +
             "transfers on a shared NIC or oversubscribed uplink)" + exact;
  }
  if (p.pp > 1 && prog_.embedding_sync_bytes > 0) {
    const int64_t a = placement_.device({0, 0, 0}), b = placement_.device({p.pp - 1, 0, 0});
    if (!copies_alike({{a, b, 1.0}, {b, a, 1.0}}, 1, true))
      return "folding may be approximate: the embedding all-reduce of the first and last stage takes routes that differ "
             "from rank to rank" + exact;
  }
  for (int64_t st = 0; st < p.pp; ++st) {
    auto ring_flows = [&](const std::vector<int64_t>& g) {
      std::vector<collectives::Flow> out;
      for (size_t i = 0; i < g.size() && g.size() > 1; ++i)
        out.push_back({g[i], g[(i + 1) % g.size()], 1.0});
      return out;
    };
    for (const auto& [experts, size, what] : {std::tuple<bool, int64_t, const char*>{true, p.ep, "expert-parallel all-to-all"},
                                              std::tuple<bool, int64_t, const char*>{false, p.cp, "context-parallel ring"}}) {
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
               " take routes that differ from group to group" + exact;
    }
    auto tp_flows = ring_flows(plan_.tp_group(st, 0));
    if (!copies_alike(tp_flows, 1, false))
      return "folding may be approximate: the tensor-parallel groups of stage " + std::to_string(st) +
             " take routes that differ from group to group" + exact;
  }
  return "";
}

void Driver::add_shared_copies(std::vector<collectives::Phase>& phases, int64_t dp_step, bool tp_ranks) const
{
  for (auto& ph : phases) {
    const size_t own = ph.flows.size();
    for (size_t i = 0; i < own; ++i) {
      auto more = shared_copies(ph.flows[i], dp_step, tp_ranks);
      ph.flows.insert(ph.flows.end(), more.begin(), more.end());
    }
  }
}

bool Driver::fold_onto(std::vector<collectives::Phase>& phases, int64_t device, int64_t dp_step) const
{
  if (full_ || layout_.has_shared_links())
    return false;
  std::vector<std::vector<collectives::Flow>> folded;
  const auto rep = placement_.coord(device);
  const int64_t dp = plan_.groups.dense_dp, tp = plan_.groups.tp;
  // A flow's kind and size, for comparing members' patterns.
  auto pattern = [&](const std::vector<collectives::Flow>& flows) {
    std::vector<std::pair<bool, double>> out;
    for (const auto& f : flows)
      out.push_back({layout_.same_node(f.src, f.dst), f.bytes});
    std::sort(out.begin(), out.end());
    return out;
  };
  for (const auto& ph : phases) {
    // Bytes each member sends and receives, within its node and across.
    std::map<int64_t, std::array<double, 4>> load;
    for (const auto& f : ph.flows) {
      const bool across = !layout_.same_node(f.src, f.dst);
      load[f.src][across ? 1 : 0] += f.bytes;
      load[f.dst][across ? 3 : 2] += f.bytes;
    }
    auto total = [](const std::array<double, 4>& l) { return l[0] + l[1] + l[2] + l[3]; };
    int64_t busiest = device;
    for (const auto& [member, l] : load)
      if (total(l) > total(load[busiest]))
        busiest = member;
    // Every member moves no more than the busiest, kind by kind, so its flows end no later (ring, all-to-all: all
    // alike; a tree: the busiest node of both trees).
    for (const auto& [member, l] : load)
      for (size_t k = 0; k < 4; ++k)
        if (l[k] > load[busiest][k] * (1 + 1e-12))
          return false;
    const auto b = placement_.coord(busiest);
    if (b.stage != rep.stage)
      return false;
    const int64_t dp_shift = ((rep.dp - b.dp) % dp + dp) % dp, tp_shift = ((rep.tp - b.tp) % tp + tp) % tp;
    std::vector<collectives::Flow> theirs, mine;
    for (const auto& f : ph.flows)
      if (f.src == busiest || f.dst == busiest) {
        theirs.push_back(f);
        mine.push_back(copy_of(f, dp_shift, tp_shift));
      }
    // Moved onto the device, the flows keep their kinds; and the groups of the other TP ranks (and, every dp_step
    // data-parallel indices, of the other slices), which the device also stands for, take routes alike.
    if (pattern(mine) != pattern(theirs) || !copies_alike(mine, dp_step, true))
      return false;
    folded.push_back(std::move(mine));
  }
  for (size_t i = 0; i < phases.size(); ++i)
    phases[i].flows = std::move(folded[i]);
  return true;
}

void Driver::pipeline_flow(int64_t src, int64_t dst, double bytes, std::function<void()> fn)
{
  auto it = pipeline_copies_.find({src, dst});
  if (it == pipeline_copies_.end())
    it = pipeline_copies_.emplace(std::make_pair(src, dst), shared_copies({src, dst, bytes}, 1, true)).first;
  const auto& copies = it->second;
  if (copies.empty()) {
    flow(src, dst, bytes, std::move(fn));
    return;
  }
  auto pending = std::make_shared<size_t>(1 + copies.size());
  auto shared_fn = std::make_shared<std::function<void()>>(std::move(fn));
  auto arrived = [pending, shared_fn]() {
    if (--*pending == 0)
      (*shared_fn)();
  };
  flow(src, dst, bytes, arrived);
  for (const auto& c : copies)
    flow(c.src, c.dst, bytes, arrived);
}

void Driver::merge_phases(std::vector<collectives::Phase>& into, std::vector<collectives::Phase> more)
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

// Runs the phases of a collective one after the other; `keep` filters the flows to simulate.
double Driver::phase_delay(const collectives::Phase& ph) const
{
  return ph.latency_s;
}

bool Driver::one_flow_phases(const std::vector<collectives::Phase>& phases, size_t from)
{
  for (size_t k = from; k < phases.size(); ++k)
    if (phases[k].flows.size() > 1)
      return false;
  return true;
}

void Driver::append_phase_segments(const std::vector<collectives::Phase>& phases, size_t from, bool first_delay_paid,
                                   std::vector<Activities::Segment>& segments)
{
  for (size_t k = from; k < phases.size(); ++k) {
    const auto& ph = phases[k];
    const double delay = k == from && first_delay_paid ? 0.0 : phase_delay(ph);
    if (delay > 0)
      segments.push_back({Activities::Segment::Kind::Delay, nullptr, nullptr, delay, 0.0});
    if (!ph.flows.empty())
      segments.push_back(flow_segment(ph.flows.front().src, ph.flows.front().dst, ph.flows.front().bytes));
  }
}

void Driver::run_phases(Phases phases, size_t i, std::function<void()> done, bool delay_paid)
{
  if (i >= phases->size()) {
    done();
    return;
  }
  // One flow per phase (a ring or a tree folded onto its busiest member, most collectives of a folded replay): the
  // phases are one sequence, a single timer while their links carry nothing else, with the dates of the phases run
  // one after the other.
  if (one_flow_phases(*phases, i)) {
    std::vector<Activities::Segment> segments;
    append_phase_segments(*phases, i, delay_paid, segments);
    if (segments.size() >= 2) {
      acts_.sequence(std::move(segments), [done = std::move(done)](const std::vector<double>&) { done(); });
      return;
    }
  }
  const auto& ph = (*phases)[i];
  auto start_flows = [this, phases, i, done]() {
    const auto& ph = (*phases)[i];
    auto pending = std::make_shared<size_t>(ph.flows.size());
    if (ph.flows.empty()) {
      run_phases(phases, i + 1, done);
      return;
    }
    for (const auto& f : ph.flows)
      flow(f.src, f.dst, f.bytes, [this, phases, i, done, pending]() {
        if (--*pending == 0)
          run_phases(phases, i + 1, done);
      });
  };
  const double delay = delay_paid ? 0.0 : phase_delay(ph);
  if (delay > 0)
    acts_.delay(delay, start_flows);
  else
    start_flows();
}

// Full fidelity: a collective starts when the last member of its group arrives. Returns true (and the
// members with their arrival times) for that last arrival.
void Driver::run_joined(const std::tuple<int, int64_t, int64_t>& key, int64_t members, size_t di, Phases phases,
                        std::function<void()> done)
{
  joined_done_[key].push_back(std::move(done));
  Instance inst;
  if (!join(key, members, di, Activities::now(), inst))
    return;
  auto dones = std::make_shared<std::vector<std::function<void()>>>(std::move(joined_done_[key]));
  joined_done_.erase(key);
  run_phases(phases, 0, [dones]() {
    for (auto& f : *dones)
      f();
  });
}

Driver::Phases Driver::rank_group_phases(const Device& d, collectives::Kind kind, double bytes, int64_t size,
                                         double inter_node_scale)
{
  // Full fidelity: one plan per group and TP rank; folded: one per stage (the representative's group, with the
  // groups of the other TP ranks where it does not fold).
  const int64_t group_key = full_ ? (d.coord.dp / size) * plan_.groups.tp + d.coord.tp : int64_t(-1);
  std::vector<std::vector<int64_t>> groups;  // the representative's (TP rank 0) first
  for (int64_t r = 0; r < plan_.groups.tp; ++r)
    if (!full_ || r == d.coord.tp)
      groups.push_back(placement_.rank_group(d.coord.stage, d.coord.dp, r, size));
  return group_phases(d, {d.coord.stage, group_key, int(kind), bytes, size}, groups, size, kind, bytes,
                      inter_node_scale);
}

Driver::Phases Driver::group_phases(const Device& d, const GroupPlanKey& key,
                                    const std::vector<std::vector<int64_t>>& groups, int64_t dp_step,
                                    collectives::Kind kind, double bytes, double inter_node_scale)
{
  auto it = group_plans_.find(key);
  if (it != group_plans_.end())
    return it->second;
  std::vector<collectives::Phase> phases;
  if (!full_) {  // the representative's own flows stand for every member's where symmetry allows (fold_onto)
    phases = collectives::plan_collective(kind, bytes, groups.front(), placement_, fabric_, inter_node_scale);
    if (fold_onto(phases, d.id, dp_step)) {
      auto ptr = std::make_shared<const std::vector<collectives::Phase>>(std::move(phases));
      group_plans_.emplace(key, ptr);
      return ptr;
    }
    phases.clear();
  }
  for (const auto& g : groups)
    merge_phases(phases, collectives::plan_collective(kind, bytes, g, placement_, fabric_, inter_node_scale));
  add_shared_copies(phases, dp_step, false);  // the groups of the other data-parallel slices
  auto ptr = std::make_shared<const std::vector<collectives::Phase>>(std::move(phases));
  group_plans_.emplace(key, ptr);
  return ptr;
}

bool Driver::join(const std::tuple<int, int64_t, int64_t>& key, int64_t members, size_t di, double t0, Instance& out)
{
  Instance& inst = instances_[key];
  inst.waiters.push_back(di);
  inst.arrival_t.push_back(t0);
  if (int64_t(inst.waiters.size()) < members)
    return false;
  out = std::move(inst);
  instances_.erase(key);
  return true;
}


}  // namespace dtsim::replay
