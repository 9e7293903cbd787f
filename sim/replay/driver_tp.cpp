#include "replay/driver.hpp"

#include <algorithm>

namespace dtsim::replay {

// ---- runs of kernels and tensor-parallel collectives -------------------------------------------------------
void Driver::book_kernel(Device& d, const Step& st, double t, double x, double own)
{
  d.b.compute_s += x * own;
  d.b.straggler_s += x * (1 - own);
  if (st.recompute)
    d.b.recompute_s += x * own;
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
  std::vector<double>& lengths = d.lanes[size_t(lane)].run_lengths;  // step end - begin's, for the booking below
  // With closed-form groups (no pair, no data-parallel kernels beside, no variability, folded), what follows reads
  // the steps, their closed-form times and whether the unit releases buckets only: a run built once is the same
  // every time it starts at this step.
  const bool same_every_time = closed_form_groups(di);
  const auto run_key = std::make_tuple(di, &steps, begin, same_every_time && releases_buckets(d, lane));
  auto known = same_every_time ? merged_runs_.find(run_key) : merged_runs_.end();
  if (known != merged_runs_.end()) {
    end = known->second.end;
    total = known->second.total;
    prepaid = known->second.prepaid;
    lengths = known->second.lengths;
  } else {
    lengths.clear();
  }
  for (; known == merged_runs_.end() && end < steps.size(); ++end) {
    const Step& st = steps[end];
    size_t group_end = 0;
    const bool group = overlap_group_at(steps, end, group_end);
    if (group && merges_group(di, steps, end, group_end)) {  // its closed-form length, in this run's activity
      double compute_end = 0;
      total += costs_.closed_form_overlap(d.id, steps, end, group_end, compute_end);
      lengths.resize(group_end - begin, 0.0);  // booked from closed_form_overlap's cache
      end = group_end - 1;  // its last step
      after_kernel = true;
      continue;
    }
    if (group && end > begin)
      break;  // run_step overlaps it with its communication
    if (st.kind == Step::Kind::Compute) {
      lengths.push_back(kernel_s(d, lane, end));
      total += lengths.back();
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
    lengths.push_back(st.kind == Step::Kind::TpCollective ? costs_.merged_tp_time(d.id, st) : 0.0);
    total += lengths.back();
    after_kernel = false;
  }
  if (same_every_time && known == merged_runs_.end())
    merged_runs_.emplace(run_key, MergedRun{end, total, prepaid, lengths});
  d.lanes[size_t(lane)].prepaid_s = prepaid;
  exec_on(gpu_host(d.id), total + prepaid, [this, di, lane, t0, begin, end, prepaid]() {
    Device& d = devices_[di];
    Lane& ln = d.lanes[size_t(lane)];
    // Each step's share, as run_step and tp_collective would have booked it one activity at a time; the last one
    // takes what is left up to the clock, so that the parts still add up to the step time exactly.
    const double now = Activities::now() - prepaid;
    size_t last = begin;  // the run's last step that is not GradReady (begin if none): found from the end
    for (size_t k = end; k > begin; --k)
      if ((*ln.steps)[k - 1].kind != Step::Kind::GradReady) {
        last = k - 1;
        break;
      }
    double t = t0;
    for (size_t k = begin; k < end; ++k) {
      const Step& st = (*ln.steps)[k];
      if (st.kind == Step::Kind::GradReady)
        continue;
      size_t group_end = 0;
      // its compute step, then what of its collectives shows after
      if (overlap_group_at(*ln.steps, k, group_end) && merges_group(di, *ln.steps, k, group_end)) {
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
      const double x = k == last ? now - t : ln.run_lengths[k - begin];
      if (kernel) {
        book_kernel(d, st, t, x, own_share(d, lane, k));
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
      kernels += kernel_s(d, lane, end);
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
        const double x = k == last ? item_end - t : kernel_s(d, lane, k);
        book_kernel(d, st, t, x, own_share(d, lane, k));
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

void Driver::finish_blocking(size_t di, int lane, const Step& st, double since, double Breakdown::*exposed)
{
  Device& d = devices_[di];
  const double now = Activities::now();
  d.b.*exposed += now - since;
  trace_.add(d.id, 1, st.label, since, now);
  d.free_t = now;
  ++d.lanes[size_t(lane)].step;
  release_gpu(di);
  run_step(di, lane);
}

void Driver::tp_collective(size_t di, int lane, const Step& st, double t0)
{
  Device& d = devices_[di];
  Lane& ln = d.lanes[size_t(lane)];
  const int64_t seq = ln.tp_seq++;
  auto finish = [this, &st, lane](size_t wi, double arrived_t) {
    finish_blocking(wi, lane, st, arrived_t, &Breakdown::exposed_tp_comm_s);
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
                   phases, [this, finish, di, t0]() {
                     if (!var_.on()) {
                       finish(di, t0);
                       return;
                     }
                     // Under variability, the wait for the group's slowest member is named as such, as the
                     // folded representative's kernels beyond its own draw are (Breakdown::straggler_s).
                     const double joined = comm_.joined_t();
                     devices_[di].b.straggler_s += joined - t0;
                     finish(di, joined);
                   });
}

}  // namespace dtsim::replay
