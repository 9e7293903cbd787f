#include "replay/driver.hpp"

namespace dtsim::replay {

// ---- data parallel -------------------------------------------------------------------------------------
void Driver::setup_buckets()
{
  const int64_t pp = plan_.groups.pp, v = int64_t(prog_.gradients.at(0).size());  // chunks per stage
  bucket_at_.assign(size_t(pp), std::vector<std::vector<double>>(size_t(v)));
  for (int64_t st = 0; st < pp; ++st)
    for (int64_t c = 0; c < v; ++c) {
      // Each model chunk is its own data-parallel module with its own buckets (Megatron-LM, PyTorch DDP).
      // Expert and non-expert gradients fill separate buckets (they are reduced over different groups).
      const auto& grads = prog_.gradients[size_t(st)][size_t(c)];
      const auto& g = grads.bytes;
      auto& at = bucket_at_[size_t(st)][size_t(c)];
      at.assign(g.size(), 0.0);
      double acc[2] = {0, 0};
      int last[2] = {-1, -1};
      for (size_t i = 0; i < g.size(); ++i)
        last[grads.is_expert(i) ? 1 : 0] = int(i);
      for (size_t i = 0; i < g.size(); ++i) {
        const int kind = grads.is_expert(i) ? 1 : 0;
        acc[kind] += g[i];
        if (acc[kind] >= plan_.comm.dp_bucket_bytes || int(i) == last[kind]) {
          at[i] = acc[kind];
          acc[kind] = 0;
        }
      }
    }
}

bool Driver::reduces_gradients(const parallel::Unit& u) const
{
  return plan_.groups.dense_dp > 1 && (plan_.comm.zero >= 2 || u.microbatch == sched_.microbatches - 1);
}

collectives::Kind Driver::gradient_collective() const
{
  // ZeRO shards the optimizer: each rank needs the reduced gradients of its own shard only.
  return plan_.comm.zero >= 1 ? collectives::Kind::ReduceScatter : collectives::Kind::AllReduce;
}

void Driver::grad_ready(size_t di, int lane, int index)
{
  Device& d = devices_[di];
  const auto& u = sched_.graph[d.lanes[size_t(lane)].unit];
  if (!plan_.comm.dp_overlap || !reduces_gradients(u))
    return;
  double bytes = bucket_at_[size_t(d.coord.stage)][size_t(u.chunk)][size_t(index)];
  const bool is_expert = prog_.gradients[size_t(d.coord.stage)][size_t(u.chunk)].is_expert(size_t(index));
  if (bytes > 0 && (!is_expert || experts_replicated()))
    enqueue_dp(di, {gradient_collective(), bytes, DpOp::What::Gradients, 0, is_expert});
}

void Driver::enqueue_gradients(size_t di, double total, double experts)
{
  if (total > 0)
    devices_[di].dp_queue.push_back({gradient_collective(), total, DpOp::What::Gradients, 0, false});
  if (experts > 0 && experts_replicated())
    devices_[di].dp_queue.push_back({gradient_collective(), experts, DpOp::What::Gradients, 0, true});
  pump_dp(di);
}

void Driver::on_backward_unit_done(size_t di, int lane)
{
  // Without overlap, sharded gradients (ZeRO 2, 3) are reduce-scattered once the chunk's backward is over;
  // replicated ones once the whole backward is over (on_backward_done).
  Device& d = devices_[di];
  const auto& u = sched_.graph[d.lanes[size_t(lane)].unit];
  if (plan_.comm.dp_overlap || plan_.comm.zero < 2 || !u.makes_gradients() || !reduces_gradients(u))
    return;
  const auto& g = prog_.gradients[size_t(d.coord.stage)][size_t(u.chunk)];
  enqueue_gradients(di, g.sum(false), g.sum(true));
}

void Driver::enqueue_dp(size_t di, DpOp op)
{
  devices_[di].dp_queue.push_back(op);
  pump_dp(di);
}

// NCCL runs a communicator's collectives one at a time, in order.
void Driver::pump_dp(size_t di)
{
  Device& d = devices_[di];
  if (d.dp_busy || d.dp_queue.empty()) {
    maybe_optimizer(di);
    return;
  }
  d.dp_busy = true;
  const DpOp op = d.dp_queue.front();
  d.dp_queue.pop_front();
  const int64_t seq = d.dp_seq++;
  double t0 = Activities::now();
  Phases phases = groups_.dp(d.id, op.kind, op.bytes, op.expert);
  // Its kernels hold their SMs from launch to end, waiting for the group's other members included: the compute
  // that runs meanwhile (the backward beside the gradient buckets, the forward beside the parameter gathers) runs
  // on the rest.
  const double share = costs_.nccl_sm_share();
  Activities::Occupation* kernels = share > 0 ? acts_.occupy(gpu_host(d.id), share) : nullptr;
  if (!full_) {
    comm_.run_phases(phases, 0, [this, di, op, t0, kernels]() { dp_op_done(di, op, t0, kernels); });
    return;
  }
  // Full: the group's members join; the collective starts when the last one arrives. Every device issues the
  // same sequence of collectives, expert ones included, so the sequence number names the instance.
  const int64_t group = d.coord.stage * plan_.groups.tp * plan_.groups.ep +
                        (op.expert ? plan_.expert_dp_index(d.coord) : d.coord.tp * plan_.groups.ep);
  const int64_t members = op.expert ? plan_.groups.expert_dp : plan_.groups.dense_dp;
  comm_.run_joined({op.expert ? kExpertDpGroup : kDpGroup, group, seq}, members, di, phases,
             [this, di, op, t0, kernels]() { dp_op_done(di, op, t0, kernels); });
}

void Driver::dp_op_done(size_t di, const DpOp& op, double t0, Activities::Occupation* kernels)
{
  if (kernels != nullptr)
    acts_.release(kernels);
  static const std::string gradients = "gradient all-reduce", scatter = "gradient reduce-scatter",
                           gather = "parameter all-gather";
  Device& d = devices_[di];
  const double now = Activities::now();
  const std::string& label = op.what != DpOp::What::Gradients                ? gather
                             : op.kind == collectives::Kind::ReduceScatter ? scatter
                                                                           : gradients;
  trace_.add(d.id, 3, label, t0, now);
  d.dp_busy = false;
  if (op.what == DpOp::What::ParamGather) {
    d.gather_state[{op.unit, op.step}] = 2;
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
      pump_dp(di);
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
  pump_dp(di);
}

void Driver::issue_gather(size_t di, UnitId unit, size_t step, const Step& st)
{
  Device& d = devices_[di];
  if (d.gather_state.count({unit, step}))
    return;
  d.gather_state[{unit, step}] = 1;
  DpOp op{collectives::Kind::AllGather, st.bytes, DpOp::What::ParamGather, step, st.expert};
  op.unit = unit;
  d.dp_queue.push_back(op);
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
    issue_gather(di, ln.unit, j, steps[j]);
  }
  auto it = d.gather_state.find({ln.unit, ln.step});
  const bool ready = it != d.gather_state.end() && it->second == 2;
  if (ready)
    d.gather_state.erase(it);
  ln.waiting_gather = !ready;
  pump_dp(di);
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
        issue_gather(di, u, j, steps[j]);
  }
}

void Driver::on_backward_done(size_t di)
{
  Device& d = devices_[di];
  if (d.backward_done)
    return;
  d.backward_done = true;
  d.backward_end_t = Activities::now();
  if (plan_.groups.dense_dp > 1 && !plan_.comm.dp_overlap && plan_.comm.zero < 2) {  // one collective of every gradient
    double total = 0, experts = 0;  // summed entry by entry, in backward order
    for (const auto& chunk : prog_.gradients[size_t(d.coord.stage)])
      for (size_t i = 0; i < chunk.bytes.size(); ++i)
        (chunk.is_expert(i) ? experts : total) += chunk.bytes[i];
    enqueue_gradients(di, total, experts);
    return;
  }
  pump_dp(di);
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
  if (!comm_.join({kEmbeddingGroup, d.coord.dp * plan_.groups.tp + d.coord.tp, 0}, 2, di, Activities::now(), inst))
    return;
  double launch = Activities::now();
  std::vector<int64_t> pair{placement_.device({0, d.coord.dp, d.coord.tp}),
                            placement_.device({plan_.groups.pp - 1, d.coord.dp, d.coord.tp})};
  auto phases = std::make_shared<std::vector<collectives::Phase>>(
      collectives::plan_collective(collectives::Kind::AllReduce, prog_.embedding_sync_bytes, pair, placement_, fabric_));
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
  if (!d.backward_done || d.optimizer_started || d.dp_busy || !d.dp_queue.empty())
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
  exec_on(gpu_host(d.id), prog_.optimizer_seconds[size_t(d.coord.stage)], [this, di, t0]() {
    Device& d = devices_[di];
    double now = Activities::now();
    d.b.optimizer_s += now - t0;
    trace_.add(d.id, 0, "optimizer", t0, now);
    const size_t st = size_t(d.coord.stage);
    const double refresh = prog_.param_allgather_bytes.empty() ? 0.0 : prog_.param_allgather_bytes[st];
    const double experts = prog_.expert_allgather_bytes.empty() || !experts_replicated()
                               ? 0.0
                               : prog_.expert_allgather_bytes[st];
    if (plan_.groups.dense_dp > 1 && (refresh > 0 || experts > 0)) {
      if (refresh > 0)
        d.dp_queue.push_back({collectives::Kind::AllGather, refresh, DpOp::What::ParamRefresh, 0, false});
      if (experts > 0)
        d.dp_queue.push_back({collectives::Kind::AllGather, experts, DpOp::What::ParamRefresh, 0, true});
      d.refresh_pending = int(d.dp_queue.size());
      pump_dp(di);
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
