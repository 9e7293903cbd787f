#include "replay/driver.hpp"

#include <memory>

namespace dtsim::replay {

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
  const double own = own_share(d, lane, compute);
  d.b.compute_s += busy * own;
  d.b.straggler_s += busy * (1 - own);
  if (c.recompute)
    d.b.recompute_s += busy * own;
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
    double drain = 0;  // a userbuffers reduce-scatter's part after the GEMM (CommCosts::ub_drain_s)
    bool gpu_released = false;
  };
  auto state = std::make_shared<State>();
  bool ring = false;  // a context-parallel ring's exposed time is its own part of the breakdown
  for (size_t k : comms)
    ring = ring || (*ln.steps)[k].kind == Step::Kind::CpRing;
  // A collective issued beside the kernels after it runs on the communication stream: in a pair, the other lane may
  // take the GPU once those kernels end (userbuffers overlap and context rings hold it to the group's end, as before).
  const bool beside = comms.size() == 1 && (*ln.steps)[comms[0]].beside_next;
  auto close = [this, di, lane, begin, end, compute, t0, state, ring]() {
    finish_overlap_group(di, lane, begin, end, compute, t0, state->compute_end - t0,
                         Activities::now() - state->compute_end, ring, state->gpu_released);
  };
  auto finish = [this, state, close]() {
    const double wait = state->compute_end + state->drain - Activities::now();
    if (wait > 0)
      acts_.delay(wait, close);
    else
      close();
  };
  // Under set_sm_margin the GEMM before a pipelined reduce-scatter runs on fewer SMs for its whole length.
  const Step& cs = (*ln.steps)[compute];
  double margin = 0;
  for (size_t k : comms)
    margin += costs_.margin_extra_s((*ln.steps)[k]);
  const double kernels_s = kernel_s(d, lane, compute) * (cs.seconds > 0 ? 1 + margin / cs.seconds : 1.0);
  exec_on(gpu_host(d.id), kernels_s, [this, di, state, finish, beside]() {
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
    const double start = Activities::now();
    overlapped_comm(di, lane, st, [this, self = weak.lock(), i, kernels, state, start, &st]() {
      acts_.release(kernels);
      if (st.ub.chunks > 0)
        state->drain = costs_.ub_drain_s(st, Activities::now() - start);
      (*self)(i + 1);
    });
  };
  (*chain)(0);
}

}  // namespace dtsim::replay
