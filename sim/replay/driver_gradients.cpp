#include "replay/driver.hpp"

namespace dtsim::replay {

// ---- data parallel -------------------------------------------------------------------------------------
void Driver::setup_buckets(Device& d)
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

void Driver::grad_ready(size_t di, int index)
{
  Device& d = devices_[di];
  const auto& u = sched_.graph[d.unit];
  if (u.microbatch != sched_.microbatches - 1 || d.buckets.empty() || !s_.parallel.dp_overlap)
    return;
  d.grads_ready[size_t(u.chunk)] = index + 1;
  release_buckets(di);
}

void Driver::release_buckets(size_t di)
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
void Driver::pump_dp(size_t di)
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

void Driver::dp_bucket_done(size_t di, double t0)
{
  static const std::string label = "gradient all-reduce";
  Device& d = devices_[di];
  trace_.add(d.id, 3, label, t0, sg4::Engine::get_clock());
  d.dp_busy = false;
  ++d.buckets_done;
  pump_dp(di);
}

void Driver::on_backward_done(size_t di)
{
  Device& d = devices_[di];
  if (d.backward_done)
    return;
  d.backward_done = true;
  d.backward_end_t = sg4::Engine::get_clock();
  release_buckets(di);
}

bool Driver::needs_embedding_sync(const Device& d) const
{
  return prog_.embedding_sync_bytes > 0 && (d.coord.stage == 0 || d.coord.stage == s_.parallel.pp - 1);
}

// First and last stage all-reduce their copies of the word-embedding gradients; waiting for the other stage
// to get there is idle time, the all-reduce itself is gradient communication.
void Driver::sync_embedding(size_t di)
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
      trace_.add(w.id, 3, label, launch, sg4::Engine::get_clock());
      maybe_optimizer(inst.waiters[i]);
    }
  });
}

void Driver::maybe_optimizer(size_t di)
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
    trace_.add(d.id, 0, "optimizer", t0, now);
    d.done_t = now;
    d.done = true;
    ++done_count_;
  });
}

}  // namespace dtsim::replay
