#include "replay/replay.hpp"

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <tuple>

#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include "collectives/collective.hpp"
#include "platform/cluster_platform.hpp"

namespace dtsim::replay {

namespace sg4 = simgrid::s4u;
using parallel::UnitId;

namespace {

// SimGrid signals are static and cannot be disconnected (3.32): one callback per process dispatches to the
// handler stored in the activity's user data.
struct Handler {
  std::function<void()> fn;
  sg4::ActivityPtr keep;  // an actor-less activity must stay referenced until it completes
};

class Driver;
Driver* g_driver = nullptr;

collectives::Kind kind_of(model::TpCollective c)
{
  switch (c) {
    case model::TpCollective::ReduceScatter: return collectives::Kind::ReduceScatter;
    case model::TpCollective::AllGather: return collectives::Kind::AllGather;
    default: return collectives::Kind::AllReduce;
  }
}

class Driver {
 public:
  Driver(const scenario::ScenarioSpec& s, const StepProgram& prog, const parallel::PipelineSchedule& sched,
         bool trace)
      : s_(s), prog_(prog), sched_(sched), trace_on_(trace),
        placement_(s.parallel.dp, s.parallel.tp, s.parallel.pp, s.hardware.node.devices),
        platform_(s.hardware, placement_)
  {
    full_ = s.fidelity == scenario::Fidelity::Full;
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
        dev.replica = full_ ? c.dp * s.parallel.tp + c.tp : 0;
        index_of_[d] = devices_.size();
        devices_.push_back(std::move(dev));
      }
    }
    const int64_t replicas = full_ ? s.parallel.dp * s.parallel.tp : 1;
    arrivals_.assign(size_t(replicas * units), Arrival{});
    for (auto& dev : devices_)
      setup_buckets(dev);
    if (trace_on_) {
      static const std::string optimizer = "optimizer";
      optimizer_label_ = &optimizer;
    }
  }

  void start()
  {
    for (size_t i = 0; i < devices_.size(); ++i)
      next_unit(i);
  }

  void dispatch(Handler* h)
  {
    graveyard_.clear();
    graveyard_.push_back(std::move(h->keep));
    auto fn = std::move(h->fn);
    free_.push_back(h);
    fn();
  }

  ReplayResult finish()
  {
    ReplayResult r;
    for (const auto& d : devices_)
      r.step_time_s = std::max(r.step_time_s, d.done_t);
    std::vector<bool> seen(size_t(s_.parallel.pp), false);
    r.per_stage.resize(size_t(s_.parallel.pp));
    for (auto& d : devices_) {
      d.b.bubble_s += r.step_time_s - d.done_t;  // finished early: waits for the slowest device
      auto& a = r.average;
      a.compute_s += d.b.compute_s;
      a.recompute_s += d.b.recompute_s;
      a.exposed_tp_comm_s += d.b.exposed_tp_comm_s;
      a.exposed_pp_comm_s += d.b.exposed_pp_comm_s;
      a.exposed_dp_comm_s += d.b.exposed_dp_comm_s;
      a.bubble_s += d.b.bubble_s;
      a.optimizer_s += d.b.optimizer_s;
      if (!seen[size_t(d.coord.stage)]) {
        seen[size_t(d.coord.stage)] = true;
        r.per_stage[size_t(d.coord.stage)] = d.b;
      }
    }
    double n = double(devices_.size());
    auto& a = r.average;
    for (double* x : {&a.compute_s, &a.recompute_s, &a.exposed_tp_comm_s, &a.exposed_pp_comm_s,
                      &a.exposed_dp_comm_s, &a.bubble_s, &a.optimizer_s})
      *x /= n;
    r.simulated_devices = int64_t(devices_.size());
    r.activities = activities_;
    r.links = platform_.link_count();
    r.trace = std::move(trace_);
    return r;
  }

  bool all_done() const { return done_count_ == devices_.size(); }

 private:
  struct Bucket {
    int64_t chunk = 0;
    int last_grad = 0;  // ready when this gradient entry of the chunk is ready
    double bytes = 0;
  };
  struct Device {
    int64_t id = 0;
    parallel::Coord coord;
    int64_t replica = 0;
    size_t pos = 0;  // next unit in the stage's order
    UnitId unit = 0;
    const std::vector<Step>* steps = nullptr;
    size_t step = 0;
    double free_t = 0;  // when the device finished its previous work
    bool waiting_recv = false;
    int64_t tp_seq = 0;
    // data parallel
    std::vector<Bucket> buckets;
    size_t buckets_released = 0, buckets_done = 0;
    bool dp_busy = false;
    std::vector<int> grads_ready;  // per chunk
    bool backward_done = false;
    double backward_end_t = 0;
    bool optimizer_started = false;
    bool embedding_joined = false, embedding_synced = false;
    double embedding_wait_s = 0;
    double done_t = 0;
    bool done = false;
    Breakdown b;
  };
  struct Arrival {
    bool arrived = false;
    bool waiting = false;
    double send_start = 0, send_end = 0;
  };
  struct Instance {
    std::vector<size_t> waiters;
    std::vector<double> arrival_t;
  };

  // ---- activities ----------------------------------------------------------------------------------------
  Handler* handler(std::function<void()> fn)
  {
    Handler* h;
    if (!free_.empty()) {
      h = free_.back();
      free_.pop_back();
    } else {
      handlers_.emplace_back();
      h = &handlers_.back();
    }
    h->fn = std::move(fn);
    ++activities_;
    return h;
  }

  void exec_on(sg4::Host* host, double seconds, std::function<void()> fn)
  {
    Handler* h = handler(std::move(fn));
    auto e = sg4::Exec::init()->set_flops_amount(std::max(seconds, 0.0) * platform::kHostSpeed)->set_host(host);
    e->set_data(h);
    h->keep = e;
    e->start();
  }

  void flow(int64_t src, int64_t dst, double bytes, std::function<void()> fn)
  {
    Handler* h = handler(std::move(fn));
    bool local = platform_.same_node(src, dst);
    auto* a = local ? platform_.gpu(src) : platform_.nic(src);
    auto* b = local ? platform_.gpu(dst) : platform_.nic(dst);
    auto c = sg4::Comm::sendto_init(a, b)->set_payload_size(uint64_t(std::max(bytes, 1.0)));
    c->set_data(h);
    h->keep = c;
    c->start();
  }

  // Runs the phases of a collective one after the other; `keep` filters the flows to simulate.
  void run_phases(std::shared_ptr<std::vector<collectives::Phase>> phases, size_t i, std::function<void()> done)
  {
    if (i >= phases->size()) {
      done();
      return;
    }
    const auto& ph = (*phases)[i];
    double alpha = ph.inter_node ? s_.hardware.network.nic.latency_s : s_.hardware.node.nvlink.latency_s;
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
    if (ph.steps > 1)
      exec_on(platform_.timer(), double(ph.steps - 1) * alpha, start_flows);
    else
      start_flows();
  }

  // ---- schedule walking ----------------------------------------------------------------------------------
  void next_unit(size_t di)
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

  void account_wait(Device& d, const Arrival& a)
  {
    double now = sg4::Engine::get_clock();
    if (now > d.free_t) {
      double comm_from = std::max(d.free_t, a.send_start);
      d.b.exposed_pp_comm_s += now - comm_from;
      d.b.bubble_s += comm_from - d.free_t;
    }
    d.free_t = now;
  }

  void run_step(size_t di)
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

  void send(size_t di, UnitId to)
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

  // device index offset of a replica (dp, tp) within its stage
  int64_t replica_offset(int64_t replica) const { return full_ ? replica : 0; }

  Arrival& arrival(int64_t replica, UnitId u)
  {
    return arrivals_[size_t(replica) * boost::num_vertices(sched_.graph) + size_t(u)];
  }

  void tp_collective(size_t di, const Step& st, double t0)
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

  // Full fidelity: a collective starts when the last member of its group arrives. Returns true (and the
  // members with their arrival times) for that last arrival.
  bool join(const std::tuple<int, int64_t, int64_t>& key, int64_t members, size_t di, double t0, Instance& out)
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

  // ---- data parallel -------------------------------------------------------------------------------------
  void setup_buckets(Device& d)
  {
    const int64_t st = d.coord.stage, v = s_.parallel.vpp;
    d.grads_ready.assign(size_t(v), 0);
    if (s_.parallel.dp == 1)
      return;
    if (!s_.parallel.dp_overlap) {  // one all-reduce of every gradient once backward is over
      double total = 0;
      for (int64_t c = 0; c < v; ++c)
        for (double b : prog_.gradients[size_t(st)][size_t(c)].bytes)
          total += b;
      d.buckets.push_back({-1, 0, total});
      return;
    }
    // Each model chunk is its own data-parallel module with its own buckets (Megatron-LM, PyTorch DDP).
    for (int64_t c = 0; c < v; ++c) {
      const auto& g = prog_.gradients[size_t(st)][size_t(c)].bytes;
      double acc = 0;
      for (size_t i = 0; i < g.size(); ++i) {
        acc += g[i];
        if (acc >= s_.parallel.dp_bucket_bytes || i + 1 == g.size()) {
          d.buckets.push_back({c, int(i), acc});
          acc = 0;
        }
      }
    }
  }

  void grad_ready(size_t di, int index)
  {
    Device& d = devices_[di];
    const auto& u = sched_.graph[d.unit];
    if (u.microbatch != sched_.microbatches - 1 || d.buckets.empty() || !s_.parallel.dp_overlap)
      return;
    d.grads_ready[size_t(u.chunk)] = index + 1;
    release_buckets(di);
  }

  void release_buckets(size_t di)
  {
    Device& d = devices_[di];
    while (d.buckets_released < d.buckets.size()) {
      const Bucket& b = d.buckets[d.buckets_released];
      bool ready = b.chunk < 0 ? d.backward_done : d.grads_ready[size_t(b.chunk)] > b.last_grad;
      if (!ready)
        break;
      ++d.buckets_released;
    }
    pump_dp(di);
  }

  // NCCL runs a communicator's collectives one at a time, in order.
  void pump_dp(size_t di)
  {
    Device& d = devices_[di];
    if (d.dp_busy || d.buckets_done >= d.buckets_released) {
      maybe_optimizer(di);
      return;
    }
    d.dp_busy = true;
    const Bucket& b = d.buckets[d.buckets_done];
    std::vector<collectives::Phase> phases;
    // Folded: the representative's group plus the groups of the other TP ranks, which share the fabric.
    std::vector<int64_t> ranks;
    if (full_)
      ranks.push_back(d.coord.tp);
    else
      for (int64_t r = 0; r < s_.parallel.tp; ++r)
        ranks.push_back(r);
    for (int64_t r : ranks) {
      auto p = collectives::plan_collective(collectives::Kind::AllReduce, b.bytes,
                                            placement_.dp_group(d.coord.stage, r), placement_);
      if (phases.empty())
        phases = std::move(p);
      else
        for (size_t i = 0; i < p.size(); ++i)
          phases[i].flows.insert(phases[i].flows.end(), p[i].flows.begin(), p[i].flows.end());
    }
    double t0 = sg4::Engine::get_clock();
    auto phases_ptr = std::make_shared<std::vector<collectives::Phase>>(std::move(phases));
    if (!full_) {
      run_phases(phases_ptr, 0, [this, di, t0]() { dp_bucket_done(di, t0); });
      return;
    }
    // Full: the group's members join; the collective starts when the last one arrives.
    Instance inst;
    if (!join({kDpGroup, d.coord.stage * s_.parallel.tp + d.coord.tp, int64_t(d.buckets_done)}, s_.parallel.dp, di,
              t0, inst))
      return;
    run_phases(phases_ptr, 0, [this, inst]() {
      for (size_t i = 0; i < inst.waiters.size(); ++i)
        dp_bucket_done(inst.waiters[i], inst.arrival_t[i]);
    });
  }

  void dp_bucket_done(size_t di, double t0)
  {
    static const std::string label = "gradient all-reduce";
    Device& d = devices_[di];
    record(d.id, 3, &label, t0, sg4::Engine::get_clock());
    d.dp_busy = false;
    ++d.buckets_done;
    pump_dp(di);
  }

  void on_backward_done(size_t di)
  {
    Device& d = devices_[di];
    if (d.backward_done)
      return;
    d.backward_done = true;
    d.backward_end_t = sg4::Engine::get_clock();
    release_buckets(di);
  }

  bool needs_embedding_sync(const Device& d) const
  {
    return prog_.embedding_sync_bytes > 0 && (d.coord.stage == 0 || d.coord.stage == s_.parallel.pp - 1);
  }

  // First and last stage all-reduce their copies of the word-embedding gradients; waiting for the other stage
  // to get there is idle time, the all-reduce itself is gradient communication.
  void sync_embedding(size_t di)
  {
    Device& d = devices_[di];
    if (d.embedding_joined)
      return;
    d.embedding_joined = true;
    Instance inst;
    if (!join({kEmbeddingGroup, d.coord.dp * s_.parallel.tp + d.coord.tp, 0}, 2, di, sg4::Engine::get_clock(), inst))
      return;
    double launch = sg4::Engine::get_clock();
    std::vector<int64_t> pair{placement_.device({0, d.coord.dp, d.coord.tp}),
                              placement_.device({s_.parallel.pp - 1, d.coord.dp, d.coord.tp})};
    auto phases = std::make_shared<std::vector<collectives::Phase>>(
        collectives::plan_collective(collectives::Kind::AllReduce, prog_.embedding_sync_bytes, pair, placement_));
    static const std::string label = "embedding gradient all-reduce";
    run_phases(phases, 0, [this, inst, launch]() {
      for (size_t i = 0; i < inst.waiters.size(); ++i) {
        Device& w = devices_[inst.waiters[i]];
        w.embedding_wait_s = launch - inst.arrival_t[i];
        w.embedding_synced = true;
        record(w.id, 3, &label, launch, sg4::Engine::get_clock());
        maybe_optimizer(inst.waiters[i]);
      }
    });
  }

  void maybe_optimizer(size_t di)
  {
    Device& d = devices_[di];
    if (!d.backward_done || d.optimizer_started || d.buckets_done < d.buckets.size())
      return;
    if (needs_embedding_sync(d) && !d.embedding_synced) {
      sync_embedding(di);
      return;
    }
    d.optimizer_started = true;
    double now = sg4::Engine::get_clock();
    d.b.exposed_dp_comm_s += now - d.backward_end_t - d.embedding_wait_s;
    d.b.bubble_s += d.embedding_wait_s;
    double t0 = now;
    exec_on(platform_.gpu(d.id), prog_.optimizer_seconds[size_t(d.coord.stage)], [this, di, t0]() {
      Device& d = devices_[di];
      double now = sg4::Engine::get_clock();
      d.b.optimizer_s += now - t0;
      record(d.id, 0, optimizer_label_, t0, now);
      d.done_t = now;
      d.done = true;
      ++done_count_;
    });
  }

  void record(int64_t device, int track, const std::string* name, double t0, double t1)
  {
    if (trace_on_)
      trace_.push_back({device, track, name, t0, t1});
  }

  const scenario::ScenarioSpec& s_;
  const StepProgram& prog_;
  const parallel::PipelineSchedule& sched_;
  bool trace_on_;
  parallel::Placement placement_;
  platform::ClusterPlatform platform_;
  bool full_ = false;
  std::vector<int64_t> recv_from_, send_to_;
  std::vector<Device> devices_;
  std::map<int64_t, size_t> index_of_;
  std::vector<Arrival> arrivals_;
  static constexpr int kTpGroup = 0, kDpGroup = 1, kEmbeddingGroup = 2;
  std::map<std::tuple<int, int64_t, int64_t>, Instance> instances_;  // (group kind, group, sequence number)
  std::deque<Handler> handlers_;
  std::vector<Handler*> free_;
  std::vector<sg4::ActivityPtr> graveyard_;
  int64_t activities_ = 0;
  size_t done_count_ = 0;
  std::vector<TraceEvent> trace_;
  const std::string* optimizer_label_ = nullptr;
};

}  // namespace

ReplayResult run_replay(const scenario::ScenarioSpec& s, const StepProgram& program,
                        const parallel::PipelineSchedule& schedule, bool record_trace)
{
  int argc = 1;
  char name[] = "dtsim";
  char* argv[] = {name, nullptr};
  xbt_log_control_set("root.thresh:critical");
  sg4::Engine engine(&argc, argv);
  // RDMA-like network: latency + size / bandwidth with max-min sharing (../shared/notes/simgrid-3.32.md).
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:0");
  Driver driver(s, program, schedule, record_trace);
  g_driver = &driver;
  static bool connected = false;
  if (!connected) {
    connected = true;
    sg4::Activity::on_completion_cb([](sg4::Activity const& a) {
      if (g_driver == nullptr || a.get_state() != sg4::Activity::State::FINISHED)
        return;
      if (auto* h = a.get_data<Handler>())
        g_driver->dispatch(h);
    });
  }
  driver.start();
  engine.run();
  if (!driver.all_done())
    throw InternalError("the step did not complete: the schedule deadlocked");
  ReplayResult r = driver.finish();
  g_driver = nullptr;
  return r;
}

}  // namespace dtsim::replay
