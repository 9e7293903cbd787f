#include "replay/driver.hpp"

#include <algorithm>

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
    if (st.kind == Step::Kind::CpRing && st.blocking) {  // the device waits for it
      if (take_gpu(di, lane))
        cp_blocking(di, lane, st, t0);
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

void Driver::exchanged(size_t di, double entered, double covered)
{
  Device& d = devices_[di];
  const double now = Activities::now();
  d.b.exposed_pp_comm_s += covered;
  d.b.bubble_s += (now - entered) - covered;
  d.free_t = now;
  next_unit(di);
}

}  // namespace dtsim::replay
