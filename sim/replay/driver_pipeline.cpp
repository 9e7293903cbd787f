#include "replay/driver.hpp"

namespace dtsim::replay {

// ---- schedule walking ----------------------------------------------------------------------------------
void Driver::next_unit(size_t di)
{
  Device& d = devices_[di];
  const auto& order = sched_.order[size_t(d.coord.stage)];
  if (d.pos >= order.size()) {
    on_backward_done(di);
    return;
  }
  d.unit = order[d.pos];
  const auto& u = sched_.graph[d.unit];
  int64_t from = recv_from_[d.unit];
  if (from >= 0) {
    Arrival& a = arrival(d.replica, d.unit);
    if (!a.arrived) {
      a.waiting = true;
      d.waiting_recv = true;
      return;
    }
    account_wait(d, a);
  }
  d.steps = &unit_steps(prog_, u.stage, u.chunk, u.microbatch, u.backward);
  d.step = 0;
  run_step(di);
}

void Driver::account_wait(Device& d, const Arrival& a)
{
  double now = sg4::Engine::get_clock();
  if (now > d.free_t) {
    double comm_from = std::max(d.free_t, a.send_start);
    d.b.exposed_pp_comm_s += now - comm_from;
    d.b.bubble_s += comm_from - d.free_t;
  }
  d.free_t = now;
}

void Driver::run_step(size_t di)
{
  Device& d = devices_[di];
  while (d.step < d.steps->size()) {
    const Step& st = (*d.steps)[d.step];
    if (st.kind == Step::Kind::GradReady) {
      grad_ready(di, st.grad_index);
      ++d.step;
      continue;
    }
    double t0 = sg4::Engine::get_clock();
    if (st.kind == Step::Kind::Compute) {
      exec_on(platform_.gpu(d.id), st.seconds, [this, di, t0, &st]() {
        Device& d = devices_[di];
        double now = sg4::Engine::get_clock();
        d.b.compute_s += now - t0;
        if (st.recompute)
          d.b.recompute_s += now - t0;
        record(d.id, 0, &st.label, t0, now);
        d.free_t = now;
        ++d.step;
        run_step(di);
      });
      return;
    }
    tp_collective(di, st, t0);
    return;
  }
  // unit finished
  const UnitId u = d.unit;
  if (send_to_[u] >= 0)
    send(di, UnitId(send_to_[u]));
  ++d.pos;
  next_unit(di);
}

void Driver::send(size_t di, UnitId to)
{
  const Device& d = devices_[di];
  const auto& target = sched_.graph[to];
  int64_t dst = placement_.device({target.stage, d.coord.dp, d.coord.tp});
  int64_t replica = d.replica;
  double t0 = sg4::Engine::get_clock();
  static const std::string label = "pipeline send";
  int64_t src = d.id;
  flow(src, dst, prog_.send_bytes, [this, replica, to, t0, src]() {
    double now = sg4::Engine::get_clock();
    record(src, 2, &label, t0, now);
    Arrival& a = arrival(replica, to);
    a.arrived = true;
    a.send_start = t0;
    a.send_end = now;
    if (a.waiting) {
      a.waiting = false;
      auto it = index_of_.find(placement_.device({sched_.graph[to].stage, 0, 0}) + replica_offset(replica));
      size_t wi = it->second;
      Device& w = devices_[wi];
      w.waiting_recv = false;
      account_wait(w, a);
      const auto& u = sched_.graph[w.unit];
      w.steps = &unit_steps(prog_, u.stage, u.chunk, u.microbatch, u.backward);
      w.step = 0;
      run_step(wi);
    }
  });
}

Driver::Arrival& Driver::arrival(int64_t replica, UnitId u)
{
  return arrivals_[size_t(replica) * boost::num_vertices(sched_.graph) + size_t(u)];
}

void Driver::tp_collective(size_t di, const Step& st, double t0)
{
  Device& d = devices_[di];
  const int64_t seq = d.tp_seq++;
  auto group = placement_.tp_group(d.coord.stage, d.coord.dp);
  auto finish = [this, &st](size_t wi, double arrived_t) {
    Device& w = devices_[wi];
    double now = sg4::Engine::get_clock();
    w.b.exposed_tp_comm_s += now - arrived_t;
    record(w.id, 1, &st.label, arrived_t, now);
    w.free_t = now;
    ++w.step;
    run_step(wi);
  };
  if (!full_) {
    auto phases = std::make_shared<std::vector<collectives::Phase>>(
        collectives::plan_collective(kind_of(st.collective), st.bytes, group, placement_));
    // Folded: only the representative's own ring edges; the other ranks' edges use their own links.
    for (auto& ph : *phases) {
      std::vector<collectives::Flow> mine;
      for (const auto& f : ph.flows)
        if (f.src == d.id)
          mine.push_back(f);
      ph.flows = std::move(mine);
    }
    run_phases(phases, 0, [finish, di, t0]() { finish(di, t0); });
    return;
  }
  Instance inst;
  if (!join({kTpGroup, d.coord.stage * s_.parallel.dp + d.coord.dp, seq}, int64_t(group.size()), di, t0, inst))
    return;
  auto phases = std::make_shared<std::vector<collectives::Phase>>(
      collectives::plan_collective(kind_of(st.collective), st.bytes, group, placement_));
  run_phases(phases, 0, [finish, inst]() {
    for (size_t i = 0; i < inst.waiters.size(); ++i)
      finish(inst.waiters[i], inst.arrival_t[i]);
  });
}

}  // namespace dtsim::replay
