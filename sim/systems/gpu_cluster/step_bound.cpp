#include "systems/gpu_cluster/step_bound.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <tuple>

#include <boost/range/iterator_range.hpp>

#include "core/diagnostics.hpp"
#include "parallel/all_to_all.hpp"
#include "parallel/collective.hpp"
#include "replay/gradient_sync.hpp"
#include "replay/overlap_group.hpp"

namespace dtsim::systems {

namespace {

double compute_seconds(const std::vector<replay::Step>& steps)
{
  double sum = 0;
  for (const replay::Step& st : steps)
    if (st.kind == replay::Step::Kind::Compute)
      sum += st.seconds;
  return sum;
}

// A gradient entry's ready point in a unit's steps (replay::Step::Kind::GradReady): the bound's lane time and kernel
// time of the steps before it.
struct GradPoint {
  int grad_index = 0;
  double lane_before = 0, kernels_before = 0;
};

// What the bound reads of a unit's steps.
struct UnitSums {
  double seconds = 0, lane = 0;
  std::vector<GradPoint> grads;
};

// The latest time the data-parallel communicator can be done with `ops` (a lower bound on each one's release and its
// duration): it runs one collective at a time, none before its release, so for every r it is busy for at least the
// durations of the collectives released at or after r, from r on.
double gradients_done_lower_bound(std::vector<std::pair<double, double>> ops)
{
  std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  double after = 0, done = 0;
  for (size_t k = 0; k < ops.size(); ++k) {
    after += ops[k].second;
    if (k + 1 == ops.size() || ops[k + 1].first < ops[k].first)  // every op released at or after this one counted
      done = std::max(done, ops[k].first + after);
  }
  return done;
}

}  // namespace

double pipeline_handoff_lower_bound_s(const parallel::DerivedPlan& plan, const replay::StepProgram& prog,
                                      int64_t from_stage, int64_t to_stage, const collectives::Fabric& fabric)
{
  // replay::PipelineTransfers sends prog.send_bytes from the sender's device to the receiver's of the same replica
  // (data-parallel and tensor-parallel rank) as one flow (CollectiveRunner::pipeline_flow; folded copies only add
  // flows it waits for). CollectiveRunner::flow_segment routes it over NVLink within a scale-up domain, NIC to NIC
  // across, and Activities::flow waits the route's latency before the flow sends uint64_t(max(bytes, 1)) bytes; its
  // route crosses the sender's own NVLink (or NIC) link, whose capacity is the fabric's nvlink_Bps (nic_Bps), and a
  // max-min share never exceeds a link's capacity. The replica the replay simulates is not known here: the least
  // over the kinds of route the replicas' pairs of devices take.
  const parallel::Placement& at = plan.placement;
  bool local = false, remote = false;
  // A stage's devices are block consecutive numbers and its peer's are `apart` away (Placement::device); the job's
  // domains hold `per_domain` consecutive numbers each and map onto distinct cluster domains. So pairs at least a
  // domain apart never share one, and a block of a domain or more holds both kinds; only a block smaller than a
  // domain (fewer pairs than a domain's devices) is looked at pair by pair. A frontier stage's 8,192 pairs are not.
  const int64_t block = at.dp() * at.tp(), per_domain = at.devices_per_domain();
  const int64_t apart = (to_stage - from_stage) * block;
  if (std::abs(apart) >= per_domain)
    remote = true;
  else if (block >= per_domain)
    local = remote = true;
  else
    for (int64_t d = from_stage * block; d < (from_stage + 1) * block; ++d)
      (at.domain_of(d) == at.domain_of(d + apart) ? local : remote) = true;
  const double bytes = std::floor(std::max(prog.send_bytes, 1.0));
  auto over = [&](double latency_s, double Bps) { return std::max(0.0, latency_s) + (Bps > 0 ? bytes / Bps : 0.0); };
  double t = std::numeric_limits<double>::infinity();
  if (local)
    t = std::min(t, over(fabric.nvlink_latency_s, fabric.nvlink_Bps));
  if (remote)
    t = std::min(t, over(fabric.nic_latency_s, fabric.nic_Bps));
  return std::isfinite(t) ? t : 0.0;
}

double parameter_refresh_lower_bound_s(const parallel::DerivedPlan& plan, const replay::StepProgram& prog,
                                       int64_t stage, const collectives::Fabric& fabric)
{
  // As replay/driver_gradients.cpp (maybe_optimizer) queues them: nothing with a single data-parallel rank; the
  // experts' gather only where other ranks hold the same experts.
  if (plan.groups.dense_dp < 2)
    return 0;
  const size_t st = size_t(stage);
  const double dense = prog.param_allgather_bytes.empty() ? 0.0 : prog.param_allgather_bytes[st];
  const double experts =
      prog.expert_allgather_bytes.empty() || plan.groups.expert_dp < 2 ? 0.0 : prog.expert_allgather_bytes[st];
  return collectives::collective_time(collectives::Kind::AllGather, dense, plan.dp_group(stage, 0), plan.placement,
                                      fabric) +
         collectives::collective_time(collectives::Kind::AllGather, experts, plan.expert_dp_group(stage, 0, 0),
                                      plan.placement, fabric);
}

double embedding_sync_lower_bound_s(const parallel::DerivedPlan& plan, const replay::StepProgram& prog,
                                    const collectives::Fabric& fabric)
{
  // replay::Driver::sync_embedding: the first and last stage's devices of the same data-parallel index and TP rank
  // all-reduce prog.embedding_sync_bytes (plan_collective over the pair; folded, the other pairs' flows only join
  // those on shared links). The replay simulates the pair of dp 0, tp 0 (folded, each stage's representative; in full
  // fidelity every device, and the step ends no earlier than any), whose flows take collective_time alone.
  if (prog.embedding_sync_bytes <= 0 || plan.groups.pp < 2)
    return 0;
  const parallel::Placement& at = plan.placement;
  const std::vector<int64_t> pair{at.device({0, 0, 0}), at.device({plan.groups.pp - 1, 0, 0})};
  return collectives::collective_time(collectives::Kind::AllReduce, prog.embedding_sync_bytes, pair, at, fabric);
}

double step_time_lower_bound(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan, const GpuStep& step)
{
  const bool pairs = plan.comm.pairs;
  const parallel::PipelineSchedule& sched = step.schedule;
  const replay::StepProgram& prog = *step.program;
  const auto& g = sched.graph;
  const size_t units = num_vertices(g);
  // seconds: the unit's kernels on the GPU; lane: that plus the expert all-to-alls and blocking TP collectives its
  // lane waits for, which no kernel of the unit overlaps (a paired unit's may overlap the other unit's kernels, not
  // its own).
  // start: the unit's start (its lane's, for a pair); second_lane: it ran as the second lane of a pair.
  std::vector<double> seconds(units), lane(units), finish(units, -1.0), start(units, 0.0);
  std::vector<char> second_lane(units, 0);
  // Per unit, the units whose outputs it reads and the least time each takes to reach it (a pipeline hand-off from
  // another stage, pipeline_handoff_lower_bound_s; nothing within a stage).
  std::vector<std::vector<std::pair<parallel::UnitId, double>>> inputs(units);
  std::map<std::pair<int64_t, int64_t>, double> handoffs;  // (from stage, to stage) -> seconds
  std::map<std::pair<int64_t, double>, double> all_to_all;  // (stage, bytes) -> seconds
  std::map<std::tuple<int64_t, int, double>, double> tensor_parallel;  // (stage, collective, bytes) -> seconds
  const collectives::Fabric fabric = collectives::fabric_of(s);
  // Units of the same stage, chunk and pass share their steps (replay::unit_steps): each list is summed once.
  std::map<const std::vector<replay::Step>*, UnitSums> summed;
  auto tp_collective = [&](const parallel::Unit& x, const replay::Step& st) {
    // At least NCCL's predicted time on an uncontended fabric, which its flows take alone (parallel/collective.hpp).
    auto [it, added] = tensor_parallel.try_emplace({x.stage, int(st.collective), st.bytes}, 0.0);
    if (added)
      it->second = collectives::collective_time(collectives::kind_of(st.collective), st.bytes,
                                                plan.tp_group(x.stage, 0), plan.placement, fabric);
    return it->second;
  };
  auto sum = [&](const parallel::Unit& x, const std::vector<replay::Step>& steps) {
    UnitSums r;
    r.seconds = compute_seconds(steps);
    double waits = 0, kernels_before = 0;
    for (size_t i = 0; i < steps.size();) {
      const replay::Step& st = steps[i];
      if (st.kind == replay::Step::Kind::GradReady)  // never in an overlap group (replay::overlap_group_end)
        r.grads.push_back({st.grad_index, waits, kernels_before});
      size_t end = i;
      if (replay::overlap_group_end(steps, i, plan.comm.tp_overlap, plan.groups.cp, end)) {
        // Its kernel and its collectives side by side; the lane goes on once all are done (replay/driver_overlap.cpp,
        // and its closed form CommCosts::closed_form_overlap): at least the longer of the kernel and the TP
        // collectives one after the other. A context-parallel ring is counted as taking no time.
        double group_kernels = 0, group_collectives = 0;
        for (size_t k = i; k < end; ++k)
          if (steps[k].kind == replay::Step::Kind::Compute) {
            group_kernels += steps[k].seconds;
            kernels_before += steps[k].seconds;
          }
          else if (steps[k].kind == replay::Step::Kind::TpCollective)
            group_collectives += tp_collective(x, steps[k]);
        waits += std::max(group_kernels, group_collectives);
        i = end;
        continue;
      }
      if (st.kind == replay::Step::Kind::Compute) {
        waits += st.seconds;
        kernels_before += st.seconds;
      } else if (st.kind == replay::Step::Kind::EpCollective) {
        auto [it, added] = all_to_all.try_emplace({x.stage, st.bytes}, 0.0);
        if (added)
          it->second = collectives::expert_all_to_all_time(st.bytes, plan.ep_group(x.stage, 0, 0), plan.placement,
                                                           fabric, s.model, plan.comm.moe_dispatcher);
        waits += it->second;
      } else if (st.kind == replay::Step::Kind::TpCollective && !st.beside_next && !plan.comm.tp_overlap) {
        // Without tp_overlap a TP collective that is not issued beside the next kernel holds its lane.
        waits += tp_collective(x, st);
      }
      ++i;
    }
    r.lane = waits;
    return r;
  };
  std::vector<const UnitSums*> sums(units);
  for (parallel::UnitId u = 0; u < units; ++u) {
    const parallel::Unit& x = g[u];
    const auto& steps = replay::unit_steps(prog, x.stage, x.chunk, x.microbatch, x.backward, x.part);
    auto [it, added] = summed.try_emplace(&steps);
    if (added)
      it->second = sum(x, steps);
    sums[u] = &it->second;
    seconds[u] = it->second.seconds;
    lane[u] = it->second.lane;
    for (auto e : boost::make_iterator_range(out_edges(u, g))) {
      if (g[e].kind != parallel::EdgeKind::Data)
        continue;
      const parallel::UnitId v = target(e, g);
      double delay = 0;
      if (g[v].stage != x.stage) {
        auto [h, new_pair] = handoffs.try_emplace({x.stage, g[v].stage}, 0.0);
        if (new_pair)
          h->second = pipeline_handoff_lower_bound_s(plan, prog, x.stage, g[v].stage, fabric);
        delay = h->second;
      }
      inputs[v].push_back({u, delay});
    }
  }
  auto ready = [&](parallel::UnitId u) {
    return std::all_of(inputs[u].begin(), inputs[u].end(), [&](const auto& in) { return finish[in.first] >= 0; });
  };
  // An input from another stage arrives no earlier than its sender's end plus the hand-off: the transfer starts
  // once the sender has posted it, after the sending unit (replay::PipelineTransfers::unit_done), and the unit runs
  // once it has arrived (asynchronous: input_ready; batched: the exchange before its group holds its receive).
  // `handoffs_counted` false: the inputs' ends alone (a pair's second unit in another group than the first, whose
  // receive the batched exchange before the pair does not hold).
  auto inputs_end = [&](parallel::UnitId u, bool handoffs_counted = true) {
    double t = 0;
    for (const auto& [i, delay] : inputs[u])
      t = std::max(t, finish[i] + (handoffs_counted ? delay : 0.0));
    return t;
  };
  // Every stage walks its order as far as its inputs allow, round after round (the schedule is acyclic, so each
  // round moves some stage on until all are done).
  const size_t stages = sched.order.size();
  std::vector<size_t> pos(stages, 0);
  std::vector<double> free_at(stages, 0.0);
  // Without pp_overlap a stage also waits for each batched exchange of sends and receives between its groups of
  // units (replay::PipelineTransfers::start_exchange); the bound leaves that out, so that it does not read
  // pp_overlap: plans that differ only in it share one bound (app::ReplayKeys::bound_class).
  for (bool moved = true; moved;) {
    moved = false;
    for (size_t st = 0; st < stages; ++st) {
      const auto& order = sched.order[st];
      while (pos[st] < order.size()) {
        const parallel::UnitId a = order[pos[st]];
        const bool pair = pairs && pos[st] + 1 < order.size() && sched.beside_previous[st][pos[st] + 1] != 0;
        if (!ready(a))
          break;
        if (!pair) {
          start[a] = std::max(free_at[st], inputs_end(a));
          finish[a] = start[a] + lane[a];
          free_at[st] = finish[a];
          ++pos[st];
          moved = true;
          continue;
        }
        // Each lane from its own inputs (the second may read the first's output); both lanes' kernels share the
        // GPU after the earlier start. The second lane counts its kernels only: with its collectives as well the
        // bound was above the replayed step on a plan of Mixtral 8x7B's full space (tp 2 pp 2 dp 16 vpp 3 sp ep 8
        // ep-overlap fp8 mb 8 full 4, interleaved-1f1b: 3.817 s against 3.802 s; tests/unit/step_bound_test.cpp),
        // the way the replay's second lane runs its collectives beside the first's work not pinned down yet.
        const parallel::UnitId b = order[pos[st] + 1];
        const double start_a = std::max(free_at[st], inputs_end(a));
        finish[a] = start_a + lane[a];
        if (!ready(b)) {
          finish[a] = -1.0;
          break;
        }
        // Batched, the exchange before the pair holds the second unit's receive only when both are of one group.
        const bool b_received = sched.group[st][pos[st] + 1] == sched.group[st][pos[st]];
        const double start_b = std::max(free_at[st], inputs_end(b, b_received));
        finish[b] = start_b + seconds[b];
        start[a] = start_a;
        start[b] = start_b;
        second_lane[b] = 1;
        free_at[st] = std::max({finish[a], finish[b], std::min(start_a, start_b) + seconds[a] + seconds[b]});
        pos[st] += 2;
        moved = true;
      }
    }
  }
  // The stage's optimizer starts once its data-parallel communicator has reduced the gradients (replay::
  // Driver::maybe_optimizer): each gradient collective the replay queues (replay/gradient_sync.hpp, dp_queue.cpp) is
  // released no earlier than the bound's time for the steps before it and takes at least NCCL's predicted time on an
  // uncontended fabric, one at a time (gradients_done_lower_bound).
  std::map<std::pair<int64_t, double>, double> dense_collectives, expert_collectives;  // (stage, bytes) -> seconds
  const collectives::Kind gradient_kind = replay::gradient_collective(plan);
  auto gradient_collective = [&](int64_t stage, double bytes, bool expert) {
    auto& cache = expert ? expert_collectives : dense_collectives;
    auto [it, added] = cache.try_emplace({stage, bytes}, 0.0);
    if (added)
      it->second = collectives::collective_time(gradient_kind, bytes,
                                                expert ? plan.expert_dp_group(stage, 0, 0) : plan.dp_group(stage, 0),
                                                plan.placement, fabric);
    return it->second;
  };
  const bool experts_replicated = plan.groups.expert_dp > 1;
  auto gradients_done = [&](size_t st) {
    if (plan.groups.dense_dp < 2)
      return 0.0;
    const int64_t stage = int64_t(st);
    std::vector<std::pair<double, double>> ops;  // (release, seconds)
    auto add = [&](double release, double bytes, bool expert) {
      if (bytes > 0 && (!expert || experts_replicated))
        ops.emplace_back(release, gradient_collective(stage, bytes, expert));
    };
    const auto& chunks = prog.gradients[st];
    if (!plan.comm.dp_overlap && plan.comm.zero < 2) {
      // Every gradient in one collective (and the experts' in another) once the stage's order is done.
      const auto [dense, experts] = replay::whole_stage_gradients(chunks);
      add(free_at[st], dense, false);
      add(free_at[st], experts, true);
      return gradients_done_lower_bound(std::move(ops));
    }
    std::vector<std::vector<double>> buckets;
    if (plan.comm.dp_overlap)
      for (const auto& chunk : chunks)
        buckets.push_back(replay::gradient_buckets(chunk, plan.comm.dp_bucket_bytes));
    for (parallel::UnitId u : sched.order[st]) {
      const parallel::Unit& x = g[u];
      if (!x.makes_gradients() || !replay::reduces_gradients(plan, sched.microbatches, x))
        continue;
      const auto& chunk = chunks[size_t(x.chunk)];
      if (!plan.comm.dp_overlap) {  // ZeRO 2 and 3: the chunk's gradients once the unit is done
        add(finish[u], chunk.sum(false), false);
        add(finish[u], chunk.sum(true), true);
        continue;
      }
      for (const GradPoint& p : sums[u]->grads)  // each bucket as the unit's backward completes it
        add(start[u] + (second_lane[u] ? p.kernels_before : p.lane_before),
            buckets[size_t(x.chunk)][size_t(p.grad_index)], chunk.is_expert(size_t(p.grad_index)));
    }
    return gradients_done_lower_bound(std::move(ops));
  };
  // Each stage's optimizer starts no earlier than its gradients are done; the first and last stage's, with tied
  // embeddings on both, no earlier than both are done (the embedding all-reduce begins once the later of the two
  // gets there: replay::Driver::maybe_optimizer) and the all-reduce has taken its time alone.
  std::vector<double> optimizer_start(stages);
  for (size_t st = 0; st < stages; ++st) {
    if (pos[st] < sched.order[st].size())
      throw InternalError("step_time_lower_bound: the schedule's stage " + std::to_string(st) + " cannot proceed");
    optimizer_start[st] = std::max(free_at[st], gradients_done(st));
  }
  if (const double sync = embedding_sync_lower_bound_s(plan, prog, fabric); sync > 0)
    optimizer_start.front() = optimizer_start.back() = std::max(optimizer_start.front(), optimizer_start.back()) + sync;
  double end = 0;
  for (size_t st = 0; st < stages; ++st)
    end = std::max(end, optimizer_start[st] + prog.optimizer_seconds[st] +
                            parameter_refresh_lower_bound_s(plan, prog, int64_t(st), fabric));
  return end + std::max(0.0, s.stack.factors.step_overhead_s);
}

}  // namespace dtsim::systems
