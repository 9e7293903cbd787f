// DeepSpeed's pipeline engine as its code runs it, against dtsim's `schedule: 1f1b`, under which the
// Megatron-DeepSpeed validation scenarios (BLOOM 176B, MT-NLG 530B) run (docs/validation.md, section 10).
//
// Code facts, microsoft/DeepSpeed deepspeed/runtime/pipe/schedule.py, the same text (two comment typos aside) from
// v0.3.16 (2021-04) through v0.7.7 (2022-12) and on the branch BLOOM ran (olruwase/elastic-ckpt-refresh, e4a5a46):
// - TrainSchedule.steps runs 2 (m + p - 1) steps. In step k stage s runs a forward when k and s have the same
//   parity, a backward otherwise, of the microbatch _step_to_micro_batch gives (the four *_step_*_id functions); a
//   step whose microbatch is out of [0, m) computes nothing.
// - A forward step first receives its own input from s - 1 and sends the input gradient of the step before to s - 1
//   (RecvActivation, SendGrad); a backward step sends the output of the step before to s + 1 and receives its own
//   gradient from s + 1 (SendActivation, RecvGrad): a unit's sends go out in the stage's next step.
// - p2p.py's send and recv are blocking (they assert async_op == False; torch.distributed.send/recv from torch 1.8,
//   a broadcast in a two-rank group before), so a transfer needs both ends to have reached it: in every step a stage
//   waits for the neighbour it exchanges with to finish its previous step (pairwise lockstep).
// The tests show that this order is dtsim's 1F1B order stage by stage, and that the lockstep, timed step by step on
// free transfers, gives exactly what dtsim's replay of `1f1b` gives, (m + p - 1)(T_F + T_B) on equal stages: the
// lockstep holds the fill and drain to 1F1B's p - 1 microbatch times, not 2 (p - 1) step times.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "parallel/schedule.hpp"
#include "replay/replay.hpp"
#include "replay/step_program.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::parallel::build_schedule;
using dtsim::test::rel_diff;
using dtsim::test::source_path;

// What stage s of p runs in step k of TrainSchedule: a forward or a backward of `microbatch` (possibly outside
// [0, m): nothing to compute). Restated from _step_to_micro_batch and its four id functions (integer division of
// non-negative numerators; a negative microbatch is only ever compared against 0).
struct DeepSpeedStep {
  int64_t microbatch = 0;
  bool forward = false;
};

DeepSpeedStep deepspeed_step(int64_t k, int64_t s, int64_t p)
{
  const bool k_even = k % 2 == 0, s_even = s % 2 == 0;
  if (k_even && s_even)
    return {k / 2 - s / 2, true};  // _even_step_forward_id
  if (!k_even && !s_even)
    return {(k - 1) / 2 - s / 2, true};  // _odd_step_forward_id
  if (k_even && !s_even)
    return {k / 2 - p + (s + 1) / 2, false};  // _even_step_backward_id
  return {((k - 1) / 2) - p + 1 + s / 2, false};  // _odd_step_backward_id
}

int64_t deepspeed_steps(int64_t p, int64_t m) { return 2 * (m + p - 1); }

bool valid(int64_t microbatch, int64_t m) { return microbatch >= 0 && microbatch < m; }

// Stage s's units in TrainSchedule's step order: (microbatch, backward).
std::vector<std::pair<int64_t, bool>> deepspeed_order(int64_t s, int64_t p, int64_t m)
{
  std::vector<std::pair<int64_t, bool>> order;
  for (int64_t k = 0; k < deepspeed_steps(p, m); ++k) {
    const auto st = deepspeed_step(k, s, p);
    if (valid(st.microbatch, m))
      order.push_back({st.microbatch, !st.forward});
  }
  return order;
}

// Every stage of every (p, m) runs each forward and backward once, forward j in step 2j + s and backward j in step
// 2j + 2p - 1 - s (so the last stage's backward follows its forward at once, and stage 0's last backward is the
// schedule's last step); in that order they are dtsim's 1F1B order, each unit a group of its own (its receives and
// the previous unit's sends exchanged before it, as TrainSchedule pairs them).
TEST(DeepSpeedTrainSchedule, StepsRunOneFOneBOrder)
{
  for (int64_t p : {1, 2, 3, 4, 5, 8, 12, 35})
    for (int64_t m : {1, 2, 3, 4, 7, 8, 16, 40}) {
      const auto sched = build_schedule("1f1b", p, 1, m);
      for (int64_t s = 0; s < p; ++s) {
        SCOPED_TRACE("p " + std::to_string(p) + " m " + std::to_string(m) + " stage " + std::to_string(s));
        for (int64_t k = 0; k < deepspeed_steps(p, m); ++k) {
          const auto st = deepspeed_step(k, s, p);
          if (!valid(st.microbatch, m))
            continue;
          const int64_t expected = st.forward ? 2 * st.microbatch + s : 2 * st.microbatch + 2 * p - 1 - s;
          EXPECT_EQ(k, expected) << (st.forward ? "forward " : "backward ") << st.microbatch;
        }
        const auto ds = deepspeed_order(s, p, m);
        const auto& ord = sched.order[size_t(s)];
        ASSERT_EQ(ds.size(), ord.size());
        for (size_t i = 0; i < ord.size(); ++i) {
          const auto& u = sched.graph[ord[i]];
          EXPECT_EQ(u.microbatch, ds[i].first) << "position " << i;
          EXPECT_EQ(u.backward, ds[i].second) << "position " << i;
          if (i > 0) {
            EXPECT_EQ(sched.group[size_t(s)][i], sched.group[size_t(s)][i - 1] + 1) << "position " << i;
          }
        }
      }
      // Stage 0's last backward ends the schedule: TrainSchedule wastes no step.
      EXPECT_EQ(deepspeed_step(deepspeed_steps(p, m) - 1, 0, p).microbatch, m - 1);
    }
}

// ---- timing: TrainSchedule's blocking steps against dtsim's replay of 1f1b ------------------------------------

// Per stage, one microbatch's forward and backward seconds.
struct StageTimes {
  std::vector<double> forward_s, backward_s;
};

// TrainSchedule's steps on free transfers: stage s's step k starts when s has finished its step k - 1 and, if it
// exchanges anything in step k, so has the neighbour it exchanges with (a blocking transfer needs both ends; the
// neighbour is in the same step, its step k - 1 being over). Returns the step time.
double lockstep_time(const StageTimes& t, int64_t p, int64_t m)
{
  std::vector<double> end(size_t(p), 0.0);
  std::vector<int64_t> prev(size_t(p), -1);  // microbatch of each stage's step k - 1
  for (int64_t k = 0; k < deepspeed_steps(p, m); ++k) {
    std::vector<double> next(static_cast<size_t>(p), 0.0);
    std::vector<int64_t> cur(static_cast<size_t>(p), 0);
    for (int64_t s = 0; s < p; ++s) {
      const auto st = deepspeed_step(k, s, p);
      cur[size_t(s)] = st.microbatch;
      // TrainSchedule.steps: a forward step talks to s - 1, a backward step to s + 1, if that stage exists and
      // either this step's microbatch (a receive) or the step before's (a send) is valid.
      const int64_t peer = st.forward ? s - 1 : s + 1;
      const bool exchanges =
          peer >= 0 && peer < p && (valid(st.microbatch, m) || valid(prev[size_t(s)], m));
      double start = end[size_t(s)];
      if (exchanges)
        start = std::max(start, end[size_t(peer)]);
      double work = 0;
      if (valid(st.microbatch, m))
        work = st.forward ? t.forward_s[size_t(s)] : t.backward_s[size_t(s)];
      next[size_t(s)] = start + work;
    }
    end = next;
    prev = cur;
  }
  return *std::max_element(end.begin(), end.end());
}

dtsim::replay::StepProgram program_of(const StageTimes& t, int64_t p)
{
  using dtsim::replay::Step;
  dtsim::replay::StepProgram prog;
  prog.forward.assign(size_t(p), std::vector<std::vector<Step>>(1));
  prog.backward.assign(size_t(p), std::vector<std::vector<Step>>(1));
  prog.gradients.assign(size_t(p), std::vector<dtsim::replay::ChunkGradients>(1));
  for (int64_t s = 0; s < p; ++s) {
    Step f;
    f.kind = Step::Kind::Compute;
    f.seconds = t.forward_s[size_t(s)];
    f.label = "forward";
    Step b = f;
    b.seconds = t.backward_s[size_t(s)];
    b.label = "backward";
    prog.forward[size_t(s)][0].push_back(f);
    prog.backward[size_t(s)][0].push_back(b);
  }
  prog.optimizer_seconds.assign(size_t(p), 0.0);
  prog.stage_params.assign(size_t(p), 0.0);
  prog.send_bytes = 1;
  return prog;
}

// dtsim's replay of 1f1b (blocking exchanges, tests/unit/data/pipeline.yaml: 4 stages, free transfers) and the
// lockstep of TrainSchedule's steps give the same step; `closed_form` (< 0: none) is checked too.
void check_lockstep(const StageTimes& t, int64_t global_batch, double closed_form)
{
  auto spec = dtsim::scenario::load_scenario(source_path("tests/unit/data/pipeline.yaml"),
                                             {"training.global_batch=" + std::to_string(global_batch)});
  const int64_t p = spec.parallel.pp, m = spec.microbatches;
  ASSERT_EQ(int64_t(t.forward_s.size()), p);
  const auto sched = build_schedule("1f1b", p, 1, m);
  const auto r = dtsim::replay::run_replay(spec, dtsim::parallel::derive_plan(spec), program_of(t, p), sched, false);
  const double lockstep = lockstep_time(t, p, m);
  EXPECT_LT(rel_diff(r.step_time_s, lockstep), 1e-6) << "replay " << r.step_time_s << " s, lockstep " << lockstep;
  if (closed_form >= 0) {
    EXPECT_LT(rel_diff(lockstep, closed_form), 1e-9) << "lockstep " << lockstep << " s, closed form " << closed_form;
  }
  // Were every step as long as the slowest instruction anywhere in it (a barrier across the pipeline), the fill
  // and drain would cost 2 (p - 1) of those steps: printed beside, for docs/validation.md section 10.
  double slowest = 0;
  for (int64_t s = 0; s < p; ++s)
    slowest = std::max({slowest, t.forward_s[size_t(s)], t.backward_s[size_t(s)]});
  std::printf("[deepspeed] p=%lld m=%lld: replay of 1f1b %.9g s, TrainSchedule lockstep %.9g s, "
              "a barrier per step %.9g s\n",
              (long long)p, (long long)m, r.step_time_s, lockstep, double(deepspeed_steps(p, m)) * slowest);
}

}  // namespace

// Equal stages, a backward three forwards long (full recomputation, as MT-NLG and BLOOM ran): (m + p - 1)(T_F + T_B).
TEST(DeepSpeedTrainSchedule, LockstepIsOneFOneBOnEqualStages)
{
  const int64_t p = 4, m = 16;
  StageTimes t{std::vector<double>(size_t(p), 1e-3), std::vector<double>(size_t(p), 3e-3)};
  check_lockstep(t, m, double(m + p - 1) * 4e-3);
}

// Unequal stages (the first holds the embedding, the last the output layer and the loss): no closed form, the
// lockstep and the replay still agree.
TEST(DeepSpeedTrainSchedule, LockstepMatchesReplayOnUnequalStages)
{
  StageTimes t{{1.1e-3, 1.0e-3, 1.0e-3, 1.3e-3}, {3.2e-3, 3.0e-3, 3.0e-3, 3.7e-3}};
  check_lockstep(t, 8, -1);
}

// MT-NLG 530B's pipeline (p 35; 240, 192 and 160 microbatches on 280, 350 and 420 nodes) and BLOOM's (p 12; global
// batch 2048 over data parallel 8 at micro batch 2: 128 microbatches), T_B = 3 T_F (full recomputation): the
// lockstep's step is 1F1B's (m + p - 1)(T_F + T_B), a fill and drain of p - 1 microbatch times, not 2 (p - 1) steps.
TEST(DeepSpeedTrainSchedule, LockstepFillIsOneFOneBsAtPublishedShapes)
{
  struct Shape {
    int64_t p, m;
  };
  for (const Shape& sh : {Shape{35, 240}, Shape{35, 192}, Shape{35, 160}, Shape{12, 128}}) {
    StageTimes t{std::vector<double>(size_t(sh.p), 1.0), std::vector<double>(size_t(sh.p), 3.0)};
    EXPECT_DOUBLE_EQ(lockstep_time(t, sh.p, sh.m), double(sh.m + sh.p - 1) * 4.0) << "p " << sh.p << " m " << sh.m;
  }
}
