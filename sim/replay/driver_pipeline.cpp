#include "replay/driver.hpp"

#include <algorithm>
#include <map>

namespace dtsim::replay {

// ---- schedule walking ----------------------------------------------------------------------------------
void Driver::next_unit(size_t di)
{
  Device& d = devices_[di];
  const auto& order = sched_.order[size_t(d.coord.stage)];
  // Between two groups of units, the stage's batched sends and receives.
  if (!plan_.comm.pp_overlap && pipeline_.exchange_due(di, d.pos)) {
    pipeline_.start_exchange(di, d.pos);
    return;
  }
  if (d.pos >= order.size()) {
    on_backward_done(di);
    return;
  }
  // A unit waits for what it receives; a pair for what both of its units receive (DualPipe's reference receives
  // both before the overlapped chunk).
  const int lanes = pair_next(d) ? 2 : 1;
  if (plan_.comm.pp_overlap) {
    for (int l = 0; l < lanes; ++l)
      if (!pipeline_.input_ready(di, order[d.pos + size_t(l)]))
        return;  // next_unit runs again once it has arrived
    for (int l = 0; l < lanes; ++l)
      if (pipeline_.receives(order[d.pos + size_t(l)]))
        account_wait(d, pipeline_.input_sent_at(di, order[d.pos + size_t(l)]));
  }
  d.paired = lanes == 2;
  d.lanes_running = lanes;
  for (int l = 0; l < lanes; ++l) {
    Lane& ln = d.lanes[size_t(l)];
    ln.unit = order[d.pos + size_t(l)];
    const auto& u = sched_.graph[ln.unit];
    ln.steps = &unit_steps(prog_, u.stage, u.chunk, u.microbatch, u.backward, u.part);
    ln.step = 0;
  }
  for (int l = 0; l < lanes; ++l)
    run_step(di, l);
}

bool Driver::pair_next(const Device& d) const
{
  // With blocking exchanges the pair's receives are those of its group, and its sends go out at the next exchange.
  const auto& beside = sched_.beside_previous[size_t(d.coord.stage)];
  return plan_.comm.pairs && d.pos + 1 < beside.size() && beside[d.pos + 1] != 0;
}

void Driver::account_wait(Device& d, double send_start)
{
  double now = Activities::now();
  if (now > d.free_t) {
    double comm_from = std::max(d.free_t, send_start);
    d.b.exposed_pp_comm_s += now - comm_from;
    d.b.bubble_s += comm_from - d.free_t;
  }
  d.free_t = now;
}

void Driver::run_step(size_t di, int lane)
{
  Device& d = devices_[di];
  Lane& ln = d.lanes[size_t(lane)];
  while (ln.step < ln.steps->size()) {
    const Step& st = (*ln.steps)[ln.step];
    if (st.kind == Step::Kind::GradReady) {
      dp_.grad_ready(di, sched_.graph[ln.unit], st.grad_index);
      ++ln.step;
      continue;
    }
    if (st.kind == Step::Kind::ParamGather) {
      if (!param_gather_ready(di, lane))
        return;  // dp_op_done resumes the device
      ++ln.step;
      continue;
    }
    double t0 = Activities::now();
    if (st.kind == Step::Kind::EpCollective) {
      ep_collective(di, lane, st, t0);
      return;
    }
    size_t group_end = 0;
    const bool group = overlap_group(ln, group_end);
    const bool merged_group = group && merges_group(di, *ln.steps, ln.step, group_end);
    if (group && !merged_group) {
      if (take_gpu(di, lane))
        run_overlap_group(di, lane, group_end, t0);
      return;
    }
    if (st.kind == Step::Kind::Compute || merged_group) {
      if (take_gpu(di, lane))
        run_merged(di, lane, t0);
      return;
    }
    if (take_gpu(di, lane))  // a pair's TP collectives are part of its chunk's compute stream
      tp_collective(di, lane, st, t0);
    return;
  }
  // unit finished
  dp_.backward_unit_done(di, sched_.graph[ln.unit]);
  pipeline_.unit_done(di, ln.unit);
  if (--d.lanes_running > 0)
    return;  // the other unit of the pair goes on
  d.pos += d.paired ? 2 : 1;
  d.paired = false;
  next_unit(di);
}

void Driver::book_kernel(Device& d, const Step& st, double t, double x)
{
  d.b.compute_s += x;
  if (st.recompute)
    d.b.recompute_s += x;
  trace_.add(d.id, 0, st.label, t, t + x);
}

void Driver::run_merged(size_t di, int lane, double t0)
{
  Device& d = devices_[di];
  const bool beside = dp_kernels_beside(di);
  if (!full_ && !costs_.tp_exclusive() && !plan_.comm.tp_overlap && !d.paired && !beside && run_sequence(di, lane, t0))
    return;
  const auto& steps = *d.lanes[size_t(lane)].steps;
  const size_t begin = d.lanes[size_t(lane)].step;
  size_t end = begin;
  double total = 0, prepaid = 0;
  bool after_kernel = false;  // a collective is timed in closed form only right after a kernel (run_step)
  for (; end < steps.size(); ++end) {
    const Step& st = steps[end];
    size_t group_end = 0;
    const bool group = overlap_group_at(steps, end, group_end);
    if (group && merges_group(di, steps, end, group_end)) {  // its closed-form length, in this run's activity
      double compute_end = 0;
      total += costs_.closed_form_overlap(d.id, steps, end, group_end, compute_end);
      end = group_end - 1;  // its last step
      after_kernel = true;
      continue;
    }
    if (group && end > begin)
      break;  // run_step overlaps it with its communication
    if (st.kind == Step::Kind::Compute) {
      total += st.seconds;
      after_kernel = true;
      continue;
    }
    if (st.kind == Step::Kind::ParamGather || st.kind == Step::Kind::EpCollective || st.kind == Step::Kind::CpRing)
      break;  // run_step handles them
    if (plan_.comm.tp_overlap && st.kind == Step::Kind::TpCollective)  // run_step groups it with its GEMMs
      break;
    if (st.kind == Step::Kind::TpCollective && (!costs_.tp_exclusive() || !after_kernel || beside)) {
      // It runs as flows (full fidelity: once its group has joined). Folded, its first latency delay is spent at
      // the end of the run: it saves an activity and changes no time (the device waits either way). Not in a
      // pair, whose other lane may take the GPU in between.
      if (!full_ && after_kernel && !plan_.comm.tp_overlap && !d.paired && !beside) {
        Phases next = groups_.tp(d.id, st);
        prepaid = next->empty() ? 0.0 : comm_.phase_delay(next->front());
      }
      break;
    }
    if (st.kind != Step::Kind::TpCollective && releases_buckets(d, lane))
      break;
    if (st.kind == Step::Kind::TpCollective)
      total += costs_.merged_tp_time(d.id, st);
    after_kernel = false;
  }
  d.lanes[size_t(lane)].prepaid_s = prepaid;
  exec_on(gpu_host(d.id), total + prepaid, [this, di, lane, t0, begin, end, prepaid]() {
    Device& d = devices_[di];
    Lane& ln = d.lanes[size_t(lane)];
    // Each step's share, as run_step and tp_collective would have booked it one activity at a time; the last one
    // takes what is left up to the clock, so that the parts still add up to the step time exactly.
    const double now = Activities::now() - prepaid;
    size_t last = begin;
    for (size_t k = begin; k < end; ++k)
      if ((*ln.steps)[k].kind != Step::Kind::GradReady)
        last = k;
    double t = t0;
    for (size_t k = begin; k < end; ++k) {
      const Step& st = (*ln.steps)[k];
      if (st.kind == Step::Kind::GradReady)
        continue;
      size_t group_end = 0;
      if (overlap_group_at(*ln.steps, k, group_end) && merges_group(di, *ln.steps, k, group_end)) {  // its compute step, then what of its collectives shows after
        size_t compute = k;
        for (size_t i = k; i < group_end; ++i)
          if ((*ln.steps)[i].kind == Step::Kind::Compute)
            compute = i;
        const Step& c = (*ln.steps)[compute];
        double busy = 0;
        const double length = costs_.closed_form_overlap(d.id, *ln.steps, k, group_end, busy);
        const double x = group_end - 1 == last ? now - t : length;
        busy = std::min(busy, x);
        d.b.compute_s += busy;
        if (c.recompute)
          d.b.recompute_s += busy;
        d.b.exposed_tp_comm_s += x - busy;
        trace_.add(d.id, 0, c.label, t, t + busy);
        for (size_t i = k; i < group_end && trace_.on(); ++i)
          if (i != compute)
            trace_.add(d.id, 1, (*ln.steps)[i].label + " (overlapped)", t, t + length);
        t += x;
        k = group_end - 1;
        continue;
      }
      const bool kernel = st.kind == Step::Kind::Compute;
      const double x = k == last ? now - t : kernel ? st.seconds : costs_.merged_tp_time(d.id, st);
      if (kernel) {
        book_kernel(d, st, t, x);
      } else {
        d.b.exposed_tp_comm_s += x;
        trace_.add(d.id, 1, st.label, t, t + x);
      }
      t += x;
    }
    d.free_t = now;
    ln.step = end;
    release_gpu(di);
    run_step(di, lane);
  });
}

bool Driver::run_sequence(size_t di, int lane, double t0)
{
  using Segment = Activities::Segment;
  Device& d = devices_[di];
  const auto& steps = *d.lanes[size_t(lane)].steps;
  const size_t begin = d.lanes[size_t(lane)].step;
  // Steps [first, last) as one item: kernels (one exec, whose last `prepaid` seconds are the next collective's
  // first latency, as run_merged spends it) or a TP collective; `segments_end`: one past its last segment.
  struct Item {
    size_t first = 0, last = 0;
    bool collective = false;
    size_t segments_end = 0;
    double prepaid = 0;
  };
  std::vector<Segment> segments;
  std::vector<Item> items;
  double kernels = 0;
  size_t kernels_first = begin;
  bool pending = false, any_collective = false;
  size_t end = begin;
  auto flush_kernels = [&](double prepaid) {
    if (!pending)
      return;
    segments.push_back({Segment::Kind::Exec, gpu_host(d.id), nullptr, kernels + prepaid, 0.0});
    items.push_back({kernels_first, end, false, segments.size(), prepaid});
    kernels = 0;
    pending = false;
  };
  double prepaid_at_break = 0;
  for (; end < steps.size(); ++end) {
    const Step& st = steps[end];
    size_t group_end = 0;
    if (end > begin && overlap_group_at(steps, end, group_end))
      break;
    if (st.kind == Step::Kind::Compute) {
      if (!pending)
        kernels_first = end;
      pending = true;
      kernels += st.seconds;
      continue;
    }
    if (st.kind == Step::Kind::ParamGather || st.kind == Step::Kind::EpCollective || st.kind == Step::Kind::CpRing)
      break;
    if (st.kind == Step::Kind::TpCollective) {
      const bool after_kernel = pending && kernels_first < end && steps[end - 1].kind == Step::Kind::Compute;
      Phases phases = groups_.tp(d.id, st);
      const double prepaid = after_kernel && !phases->empty() ? comm_.phase_delay(phases->front()) : 0.0;
      if (!comm_.one_flow_phases(*phases, 0)) {
        prepaid_at_break = prepaid;
        break;
      }
      flush_kernels(prepaid);
      comm_.append_phase_segments(*phases, 0, prepaid > 0, segments);
      items.push_back({end, end + 1, true, segments.size(), 0.0});
      any_collective = true;
      continue;
    }
    if (releases_buckets(d, lane))
      break;
    // A GradReady that releases nothing: the kernels' exec goes on past it, and a collective after it is not
    // right after a kernel (no prepaid latency), as in run_merged.
  }
  if (!any_collective)
    return false;
  flush_kernels(prepaid_at_break);
  d.lanes[size_t(lane)].prepaid_s = prepaid_at_break;
  acts_.sequence(std::move(segments), [this, di, lane, t0, end, items](const std::vector<double>& ends) {
    Device& d = devices_[di];
    Lane& ln = d.lanes[size_t(lane)];
    double t = t0;
    for (const Item& it : items) {
      const double item_end = (it.segments_end > 0 ? ends[it.segments_end - 1] : t0) - it.prepaid;
      if (it.collective) {
        const Step& st = (*ln.steps)[it.first];
        d.b.exposed_tp_comm_s += item_end - t;
        trace_.add(d.id, 1, st.label, t, item_end);
        t = item_end;
        continue;
      }
      // Each kernel's share, as run_merged books it: the last one takes what is left up to the run's end.
      size_t last = it.first;
      for (size_t k = it.first; k < it.last; ++k)
        if ((*ln.steps)[k].kind == Step::Kind::Compute)
          last = k;
      for (size_t k = it.first; k < it.last; ++k) {
        const Step& st = (*ln.steps)[k];
        if (st.kind != Step::Kind::Compute)
          continue;
        const double x = k == last ? item_end - t : st.seconds;
        book_kernel(d, st, t, x);
        t += x;
      }
    }
    d.free_t = t;
    ln.step = end;
    release_gpu(di);
    run_step(di, lane);
  });
  return true;
}

void Driver::exchanged(size_t di, double entered, double covered)
{
  Device& d = devices_[di];
  const double now = Activities::now();
  d.b.exposed_pp_comm_s += covered;
  d.b.bubble_s += (now - entered) - covered;
  d.free_t = now;
  next_unit(di);
}

void Driver::tp_collective(size_t di, int lane, const Step& st, double t0)
{
  Device& d = devices_[di];
  Lane& ln = d.lanes[size_t(lane)];
  const int64_t seq = ln.tp_seq++;
  auto finish = [this, &st, lane](size_t wi, double arrived_t) {
    Device& w = devices_[wi];
    double now = Activities::now();
    w.b.exposed_tp_comm_s += now - arrived_t;
    trace_.add(w.id, 1, st.label, arrived_t, now);
    w.free_t = now;
    ++w.lanes[size_t(lane)].step;
    release_gpu(wi);
    run_step(wi, lane);
  };
  if (costs_.tp_exclusive() && ln.prepaid_s > 0) {  // its whole time was spent with the kernel before it
    const double prepaid = ln.prepaid_s;
    ln.prepaid_s = 0;
    finish(di, t0 - prepaid);
    return;
  }
  Phases phases = groups_.tp(d.id, st);
  if (!full_) {
    // The latency of the first phase may have been spent already, at the end of the kernel before.
    const double prepaid = ln.prepaid_s;
    ln.prepaid_s = 0;
    comm_.run_phases(phases, 0, [finish, di, t0, prepaid]() { finish(di, t0 - prepaid); }, prepaid > 0);
    return;
  }
  const int64_t group = d.coord.stage * plan_.groups.dense_dp + d.coord.dp;
  comm_.run_joined(CollectiveRunner::join_key(CollectiveRunner::kTpGroup, lane, group, seq), plan_.groups.tp, di,
                   phases, [finish, di, t0]() { finish(di, t0); });
}

// ---- tensor-parallel overlap (parallel.tp_overlap) ------------------------------------------------------
// An all-gather overlaps the compute step that consumes it, a reduce-scatter the one that produces it: the group is
// [all-gather] compute [reduce-scatter]. The collectives run one after the other on the TP communicator while the
// GPU computes; the device goes on when both are done. While a collective runs, its kernels hold some of the GPU's
// streaming multiprocessors and the compute beside it runs on the others.
bool Driver::merges_group(size_t di, const std::vector<Step>& steps, size_t begin, size_t end) const
{
  // TP collectives around one compute step, whose timeline is known (closed_form_groups). A context-parallel ring
  // runs as flows.
  if (!closed_form_groups(di))
    return false;
  for (size_t i = begin; i < end; ++i)
    if (steps[i].kind != Step::Kind::Compute && steps[i].kind != Step::Kind::TpCollective)
      return false;
  return true;
}

bool Driver::dp_kernels_beside(size_t di) const
{
  if (costs_.nccl_sm_share() == 0)
    return false;
  return dp_.active(di) || (devices_[di].paired && plan_.groups.dense_dp > 1);
}

bool Driver::overlap_group_at(const std::vector<Step>& steps, size_t at, size_t& end) const
{
  auto compute = [&](size_t k) { return k < steps.size() && steps[k].kind == Step::Kind::Compute; };
  // A collective issued asynchronously beside the kernels after it (a column-parallel layer's backward gather and
  // reduce-scatter, model::Segment::beside_next), with or without tp_overlap.
  if (at < steps.size() && steps[at].kind == Step::Kind::TpCollective && steps[at].beside_next && compute(at + 1)) {
    end = at + 2;
    return true;
  }
  if (!plan_.comm.tp_overlap && plan_.groups.cp == 1)  // nothing overlaps: the common case, decided at once
    return false;
  size_t i = at;
  auto is = [&](size_t k, model::TpCollective c) {
    return k < steps.size() && steps[k].kind == Step::Kind::TpCollective && steps[k].collective == c;
  };
  // Context parallel: the ring before the attention it feeds (forward), after the attention whose gradients it
  // carries (backward); always overlapped, as Megatron-LM's ring attention does.
  auto ring = [&](size_t k, model::TpCollective c) {
    return k < steps.size() && steps[k].kind == Step::Kind::CpRing && steps[k].collective == c;
  };
  if ((ring(i, model::TpCollective::ContextGather) && compute(i + 1)) ||
      (compute(i) && ring(i + 1, model::TpCollective::ContextGatherReduce))) {
    end = i + 2;
    return true;
  }
  if (!plan_.comm.tp_overlap)
    return false;
  if (is(i, model::TpCollective::AllGather) && compute(i + 1))
    i += 2;
  else if (compute(i) && is(i + 1, model::TpCollective::ReduceScatter))
    i += 1;
  else
    return false;
  if (is(i, model::TpCollective::ReduceScatter))
    ++i;
  end = i;
  return true;
}

void Driver::overlapped_comm(size_t di, int lane, const Step& st, std::function<void()> done)
{
  Device& d = devices_[di];
  if (st.kind == Step::Kind::CpRing) {
    cp_ring(di, lane, st, std::move(done));
    return;
  }
  const int64_t seq = d.lanes[size_t(lane)].tp_seq++;
  if (!full_) {
    if (costs_.tp_exclusive())  // nothing else uses these links: its closed-form time
      acts_.delay(costs_.tp_exclusive_time(d.id, st), std::move(done));
    else
      comm_.run_phases(groups_.tp(d.id, st), 0, std::move(done));
    return;
  }
  const int64_t group = d.coord.stage * plan_.groups.dense_dp + d.coord.dp;
  comm_.run_joined(CollectiveRunner::join_key(CollectiveRunner::kTpGroup, lane, group, seq), plan_.groups.tp, di,
                   groups_.tp(d.id, st), std::move(done));
}

void Driver::finish_overlap_group(size_t di, int lane, size_t begin, size_t end, size_t compute, double t0,
                                  double busy, double exposed, bool ring, bool gpu_released)
{
  Device& d = devices_[di];
  Lane& ln = d.lanes[size_t(lane)];
  const double now = Activities::now();
  const Step& c = (*ln.steps)[compute];
  d.b.compute_s += busy;
  if (c.recompute)
    d.b.recompute_s += busy;
  double& waited = ring ? d.b.exposed_cp_comm_s : d.b.exposed_tp_comm_s;
  if (gpu_released) {
    book_idle(d, waited);  // the other lane may have computed meanwhile
  } else {
    waited += exposed;
    d.free_t = now;
  }
  trace_.add(d.id, 0, c.label, t0, t0 + busy);
  for (size_t k = begin; k < end && trace_.on(); ++k)
    if (k != compute)
      trace_.add(d.id, 1, (*ln.steps)[k].label + " (overlapped)", t0, now);
  ln.step = end;
  if (!gpu_released)
    release_gpu(di);  // paired: the group held the GPU, its collectives included
  run_step(di, lane);
}

void Driver::run_overlap_group(size_t di, int lane, size_t end, double t0)
{
  Device& d = devices_[di];
  const Lane& ln = d.lanes[size_t(lane)];
  const size_t begin = ln.step;
  size_t compute = begin;
  std::vector<size_t> comms;
  for (size_t k = begin; k < end; ++k) {
    if ((*ln.steps)[k].kind == Step::Kind::Compute)
      compute = k;
    else
      comms.push_back(k);
  }
  struct State {
    int pending = 2;
    double compute_end = 0;
    bool gpu_released = false;
  };
  auto state = std::make_shared<State>();
  bool ring = false;  // a context-parallel ring's exposed time is its own part of the breakdown
  for (size_t k : comms)
    ring = ring || (*ln.steps)[k].kind == Step::Kind::CpRing;
  // A collective issued beside the kernels after it runs on the communication stream: in a pair, the other lane may
  // take the GPU once those kernels end (userbuffers overlap and context rings hold it to the group's end, as before).
  const bool beside = comms.size() == 1 && (*ln.steps)[comms[0]].beside_next;
  auto finish = [this, di, lane, begin, end, compute, t0, state, ring]() {
    finish_overlap_group(di, lane, begin, end, compute, t0, state->compute_end - t0,
                         Activities::now() - state->compute_end, ring, state->gpu_released);
  };
  exec_on(gpu_host(d.id), (*ln.steps)[compute].seconds, [this, di, state, finish, beside]() {
    state->compute_end = Activities::now();
    if (--state->pending == 0) {
      finish();
    } else if (beside && devices_[di].paired) {
      state->gpu_released = true;
      devices_[di].free_t = state->compute_end;
      release_gpu(di);
    }
  });
  // The collectives one after the other (the chain refers to itself weakly; each pending step keeps it alive).
  auto chain = std::make_shared<std::function<void(size_t)>>();
  std::weak_ptr<std::function<void(size_t)>> weak = chain;
  *chain = [this, di, lane, comms, state, finish, weak](size_t i) {
    if (i == comms.size()) {
      if (--state->pending == 0)
        finish();
      return;
    }
    const Step& st = (*devices_[di].lanes[size_t(lane)].steps)[comms[i]];
    if (st.kind != Step::Kind::TpCollective) {
      overlapped_comm(di, lane, st, [self = weak.lock(), i]() { (*self)(i + 1); });
      return;
    }
    auto kernels = acts_.occupy(gpu_host(devices_[di].id), costs_.overlap_sm_share(st));
    overlapped_comm(di, lane, st, [this, self = weak.lock(), i, kernels]() {
      acts_.release(kernels);
      (*self)(i + 1);
    });
  };
  (*chain)(0);
}

}  // namespace dtsim::replay
