#include "replay/driver.hpp"

namespace dtsim::replay {

// ---- data parallel: what the device does when its communicator finishes, and the end of its step ------------
void Driver::dp_op_done(size_t di, const DpOp& op, double t0)
{
  static const std::string gradients = "gradient all-reduce", scatter = "gradient reduce-scatter",
                           gather = "parameter all-gather";
  Device& d = devices_[di];
  const double now = Activities::now();
  const std::string& label = op.what != DpOp::What::Gradients                ? gather
                             : op.kind == collectives::Kind::ReduceScatter ? scatter
                                                                           : gradients;
  trace_.add(d.id, 3, label, t0, now);
  if (op.what == DpOp::What::ParamGather) {
    for (int lane = 0; lane < 2; ++lane) {
      Lane& ln = d.lanes[size_t(lane)];
      if (!ln.waiting_gather || ln.unit != op.unit || ln.step != op.step)
        continue;
      ln.waiting_gather = false;
      if (d.paired) {
        book_idle(d, d.b.exposed_dp_comm_s);
      } else {
        d.b.exposed_dp_comm_s += now - d.free_t;
        d.free_t = now;
      }
      ++ln.step;
      dp_.pump(di);
      run_step(di, lane);
      return;
    }
  } else if (op.what == DpOp::What::ParamRefresh) {
    d.b.exposed_dp_comm_s += now - t0;
    if (--d.refresh_pending == 0) {
      finish_device(di);
      return;
    }
  }
  dp_.pump(di);
}

bool Driver::param_gather_ready(size_t di, int lane)
{
  Device& d = devices_[di];
  Lane& ln = d.lanes[size_t(lane)];
  const auto& steps = *ln.steps;
  // Issue this step's gather (if it was not issued ahead) and prefetch the next one.
  size_t issued = 0;
  for (size_t j = ln.step; j < steps.size() && issued < 2; ++j) {
    if (steps[j].kind != Step::Kind::ParamGather)
      continue;
    ++issued;
    dp_.issue_gather(di, ln.unit, j, steps[j]);
  }
  const bool ready = dp_.take_gathered(di, ln.unit, ln.step);
  ln.waiting_gather = !ready;
  dp_.pump(di);
  return ready;
}

void Driver::issue_refresh_gathers(size_t di)
{
  Device& d = devices_[di];
  for (UnitId u : sched_.order[size_t(d.coord.stage)]) {
    const auto& unit = sched_.graph[u];
    if (unit.backward || unit.microbatch != 0)
      continue;
    const auto& steps = unit_steps(prog_, unit.stage, unit.chunk, unit.microbatch, false);
    for (size_t j = 0; j < steps.size(); ++j)
      if (steps[j].kind == Step::Kind::ParamGather)
        dp_.issue_gather(di, u, j, steps[j]);
  }
}

void Driver::on_backward_done(size_t di)
{
  Device& d = devices_[di];
  if (d.backward_done)
    return;
  d.backward_done = true;
  d.backward_end_t = Activities::now();
  dp_.backward_done(di);
}

bool Driver::needs_embedding_sync(const Device& d) const
{
  return prog_.embedding_sync_bytes > 0 && (d.coord.stage == 0 || d.coord.stage == plan_.groups.pp - 1);
}

// First and last stage all-reduce their copies of the word-embedding gradients; waiting for the other stage
// to get there is idle time, the all-reduce itself is gradient communication.
void Driver::sync_embedding(size_t di)
{
  Device& d = devices_[di];
  if (d.embedding_joined)
    return;
  d.embedding_joined = true;
  CollectiveRunner::Instance inst;
  const int64_t pair_index = d.coord.dp * plan_.groups.tp + d.coord.tp;
  if (!comm_.join({CollectiveRunner::kEmbeddingGroup, pair_index, 0}, 2, di, Activities::now(), inst))
    return;
  double launch = Activities::now();
  std::vector<int64_t> pair{placement_.device({0, d.coord.dp, d.coord.tp}),
                            placement_.device({plan_.groups.pp - 1, d.coord.dp, d.coord.tp})};
  auto phases = std::make_shared<std::vector<collectives::Phase>>(collectives::plan_collective(
      collectives::Kind::AllReduce, prog_.embedding_sync_bytes, pair, placement_, fabric_));
  folding_.add_shared_copies(*phases, 1, true);  // folded: the pairs of the other TP ranks and replicas
  static const std::string label = "embedding gradient all-reduce";
  comm_.run_phases(phases, 0, [this, inst, launch]() {
    for (size_t i = 0; i < inst.waiters.size(); ++i) {
      Device& w = devices_[inst.waiters[i]];
      w.embedding_wait_s = launch - inst.arrival_t[i];
      w.embedding_synced = true;
      trace_.add(w.id, 3, label, launch, Activities::now());
      maybe_optimizer(inst.waiters[i]);
    }
  });
}

void Driver::maybe_optimizer(size_t di)
{
  Device& d = devices_[di];
  if (!d.backward_done || d.optimizer_started || dp_.active(di))
    return;
  if (needs_embedding_sync(d) && !d.embedding_synced) {
    sync_embedding(di);
    return;
  }
  d.optimizer_started = true;
  double now = Activities::now();
  d.b.exposed_dp_comm_s += now - d.backward_end_t - d.embedding_wait_s;
  d.b.bubble_s += d.embedding_wait_s;
  double t0 = now;
  const KernelFactor f = var_.device(d.id);
  exec_on(gpu_host(d.id), prog_.optimizer_seconds[size_t(d.coord.stage)] * f.time, [this, di, t0, f]() {
    Device& d = devices_[di];
    double now = Activities::now();
    d.b.optimizer_s += (now - t0) * f.own / f.time;
    d.b.straggler_s += (now - t0) * (1 - f.own / f.time);
    trace_.add(d.id, 0, "optimizer", t0, now);
    const size_t st = size_t(d.coord.stage);
    const double refresh = prog_.param_allgather_bytes.empty() ? 0.0 : prog_.param_allgather_bytes[st];
    const double experts = prog_.expert_allgather_bytes.empty() || !dp_.experts_replicated()
                               ? 0.0
                               : prog_.expert_allgather_bytes[st];
    if (plan_.groups.dense_dp > 1 && (refresh > 0 || experts > 0)) {
      d.refresh_pending = dp_.queue_refresh(di, refresh, experts);
      dp_.pump(di);
      return;
    }
    finish_device(di);
  });
}

void Driver::finish_device(size_t di)
{
  Device& d = devices_[di];
  d.done_t = Activities::now();
  d.done = true;
  ++done_count_;
  if (all_done() && on_done_)
    on_done_();
}

}  // namespace dtsim::replay
