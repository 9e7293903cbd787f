// Pipeline schedules: structure of Megatron-LM's GPipe / 1F1B / interleaved 1F1B orders, and bubble fractions
// (p-1)/m and (p-1)/(v*m) from Narayanan et al. 2021, Sec. 2.2, measured by replaying a compute-only program.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <tuple>

#include "parallel/schedule.hpp"
#include "replay/replay.hpp"
#include "replay/step_program.hpp"
#include "scenario/scenario_spec.hpp"
#include "scenario/schedule_registry.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::parallel::build_schedule;
using dtsim::parallel::is_acyclic;
using dtsim::parallel::PipelineSchedule;
using dtsim::test::rel_diff;
using dtsim::test::source_path;

// Forward units a stage runs before its first backward unit.
int64_t forwards_before_first_backward(const PipelineSchedule& s, int64_t stage)
{
  int64_t n = 0;
  for (auto id : s.order[size_t(stage)]) {
    if (s.graph[id].backward)
      break;
    ++n;
  }
  return n;
}

void check_structure(const std::string& schedule, int64_t p, int64_t v, int64_t m)
{
  SCOPED_TRACE(schedule + " p " + std::to_string(p) + " v " + std::to_string(v) + " m " + std::to_string(m));
  auto s = build_schedule(schedule, p, v, m);
  const int64_t passes = dtsim::scenario::schedule_def(schedule).splits_backward ? 3 : 2;  // F, B (and W)
  ASSERT_EQ(s.order.size(), size_t(p));
  EXPECT_EQ(int64_t(boost::num_vertices(s.graph)), passes * m * v * p);
  EXPECT_TRUE(is_acyclic(s));
  std::set<dtsim::parallel::UnitId> everywhere;
  for (int64_t st = 0; st < p; ++st) {
    const auto& ord = s.order[size_t(st)];
    EXPECT_EQ(int64_t(ord.size()), passes * m * v);
    std::set<std::tuple<int64_t, int64_t, bool, int>> seen;
    for (auto id : ord) {
      const auto& u = s.graph[id];
      EXPECT_EQ(u.stage, st);
      EXPECT_TRUE(u.chunk >= 0 && u.chunk < v);
      EXPECT_TRUE(u.microbatch >= 0 && u.microbatch < m);
      EXPECT_TRUE(seen.insert({u.chunk, u.microbatch, u.backward, int(u.part)}).second) << "unit listed twice";
      EXPECT_TRUE(everywhere.insert(id).second) << "unit on two stages";
    }
    EXPECT_EQ(int64_t(seen.size()), passes * m * v);  // every (chunk, microbatch, pass) exactly once
  }
}

TEST(ScheduleStructure, EveryUnitOnceAndAcyclic)
{
  for (int64_t p : {1, 2, 4, 8})
    for (int64_t m : {1, 3, 8, 16}) {
      check_structure("gpipe", p, 1, m);
      check_structure("1f1b", p, 1, m);
      check_structure("zb-h1", p, 1, m);
      check_structure("zb-h2", p, 1, m);
    }
  for (int64_t p : {2, 4})
    for (int64_t v : {2, 3, 4})
      for (int64_t m : {p, 2 * p, 4 * p})
        check_structure("interleaved-1f1b", p, v, m);
  // ZB-V, two chunks in a V: any microbatch count (fewer than p, odd, many).
  for (int64_t p : {2, 3, 4, 8, 16})
    for (int64_t m : {1, 3, 8, 16, 33})
      check_structure("zb-v", p, 2, m);
}

// ZB-V's V (Qi et al., NeurIPS 2024, Sec. 3): chunk 0 of stage i holds virtual stage i, chunk 1 virtual stage
// 2p - 1 - i. Activations go down the stages through chunk 0 and back up through chunk 1, each data edge between
// neighbouring stages but the last stage's hand-off from its chunk 0 to its chunk 1, which stays on the stage; the
// loss (a forward feeding a backward) is on the first stage's chunk 1.
TEST(ScheduleStructure, ZbVPlacesItsChunksInAV)
{
  for (int64_t p : {2, 4, 8}) {
    const int64_t m = 2 * p;
    auto s = build_schedule("zb-v", p, 2, m);
    SCOPED_TRACE("p " + std::to_string(p));
    for (int64_t st = 0; st < p; ++st) {
      EXPECT_EQ(s.virtual_stage(st, 0), st);
      EXPECT_EQ(s.virtual_stage(st, 1), 2 * p - 1 - st);
    }
    EXPECT_EQ(s.chain_length(), 2 * p);
    int64_t crossing = 0, local_handoffs = 0, losses = 0;
    for (auto [e, end] = boost::edges(s.graph); e != end; ++e) {
      if (s.graph[*e].kind != dtsim::parallel::EdgeKind::Data)
        continue;
      const auto& a = s.graph[boost::source(*e, s.graph)];
      const auto& b = s.graph[boost::target(*e, s.graph)];
      if (a.stage != b.stage) {
        EXPECT_EQ(std::abs(a.stage - b.stage), 1);
        EXPECT_EQ(a.chunk, b.chunk);  // chunk 0 down and chunk 1 up, forward and backward alike
        EXPECT_EQ(b.stage - a.stage, (a.chunk == 0) != a.backward ? 1 : -1);
        ++crossing;
      } else if (!a.backward && !b.backward) {
        EXPECT_EQ(a.stage, p - 1);
        EXPECT_TRUE(a.chunk == 0 && b.chunk == 1);
        ++local_handoffs;
      } else if (!a.backward && b.backward) {
        EXPECT_TRUE(a.stage == 0 && a.chunk == 1 && b.chunk == 1);
        ++losses;
      } else if (a.part == dtsim::scenario::BackwardPart::Input && b.part == dtsim::scenario::BackwardPart::Input) {
        EXPECT_EQ(a.stage, p - 1);  // the gradient's hand-off back from chunk 1 to chunk 0
        EXPECT_TRUE(a.chunk == 1 && b.chunk == 0);
        ++local_handoffs;
      }
    }
    EXPECT_EQ(crossing, m * 4 * (p - 1));  // 2p - 2 sends down and back, forward and backward
    EXPECT_EQ(local_handoffs, 2 * m);
    EXPECT_EQ(losses, m);
  }
}

// GPipe: all forwards, then all backwards.
TEST(ScheduleStructure, GPipeRunsAllForwardsFirst)
{
  const int64_t p = 4, m = 8;
  auto s = build_schedule("gpipe", p, 1, m);
  for (int64_t st = 0; st < p; ++st)
    EXPECT_EQ(forwards_before_first_backward(s, st), m);
}

// Megatron-LM's 1F1B: stage s runs p - s - 1 warmup forwards, then alternates one forward and one backward,
// so p - s forwards come before its first backward; with m <= warmup it runs all m forwards first.
TEST(ScheduleStructure, OneFOneBWarmup)
{
  for (int64_t p : {2, 4, 8})
    for (int64_t m : {2, 4, 8, 16})
      for (int64_t st = 0; st < p; ++st) {
        auto s = build_schedule("1f1b", p, 1, m);
        const int64_t warmup = std::min(p - st - 1, m);
        const int64_t expected = warmup < m ? warmup + 1 : m;
        EXPECT_EQ(forwards_before_first_backward(s, st), expected) << "p " << p << " m " << m << " stage " << st;
        // Steady state strictly alternates backward and forward after the warmup.
        const auto& ord = s.order[size_t(st)];
        for (int64_t i = warmup; i < 2 * m - warmup; ++i)
          EXPECT_EQ(s.graph[ord[size_t(i)]].backward, (i - warmup) % 2 == 1) << "position " << i;
        // Microbatches in order in each direction.
        int64_t next_f = 0, next_b = 0;
        for (auto id : ord) {
          const auto& u = s.graph[id];
          EXPECT_EQ(u.microbatch, u.backward ? next_b++ : next_f++);
        }
      }
}

// Megatron-LM's interleaved schedule: stage s warms up with (p - s - 1) * 2 + (v - 1) * p forward chunks; forward
// chunks go in groups of p microbatches through chunk 0, then chunk 1, ...; backward from the last chunk.
TEST(ScheduleStructure, InterleavedWarmupAndChunkOrder)
{
  for (int64_t p : {2, 4})
    for (int64_t v : {2, 4})
      for (int64_t m : {p, 2 * p, 4 * p}) {
        auto s = build_schedule("interleaved-1f1b", p, v, m);
        for (int64_t st = 0; st < p; ++st) {
          const int64_t warmup = std::min((p - st - 1) * 2 + (v - 1) * p, m * v);
          const int64_t expected = warmup < m * v ? warmup + 1 : m * v;
          EXPECT_EQ(forwards_before_first_backward(s, st), expected)
              << "p " << p << " v " << v << " m " << m << " stage " << st;
        }
        // Stage 0's k-th forward: chunk (k / p) % v, microbatch (k / (p v)) * p + k % p.
        int64_t k = 0;
        for (auto id : s.order[0]) {
          const auto& u = s.graph[id];
          if (u.backward)
            continue;
          EXPECT_EQ(u.chunk, (k / p) % v) << "forward " << k;
          EXPECT_EQ(u.microbatch, (k / (p * v)) * p + k % p) << "forward " << k;
          ++k;
        }
        int64_t j = 0;
        for (auto id : s.order[0]) {
          const auto& u = s.graph[id];
          if (!u.backward)
            continue;
          EXPECT_EQ(u.chunk, v - 1 - (j / p) % v) << "backward " << j;
          ++j;
        }
      }
  // The first stage of p = 4, v = 2 warms up with (4-0-1)*2 + (2-1)*4 = 10 forward chunks.
  auto s = build_schedule("interleaved-1f1b", 4, 2, 8);
  EXPECT_EQ(forwards_before_first_backward(s, 0), 11);
}

// ---- bubbles from replay (one SimGrid engine per process: one replay per TEST) -----------------------------

constexpr double kTf = 1e-3, kTb = 2e-3;  // forward and backward time of a whole stage for one microbatch

dtsim::replay::StepProgram compute_only_program(int64_t p, int64_t v)
{
  using dtsim::replay::Step;
  dtsim::replay::StepProgram prog;
  prog.forward.assign(size_t(p), std::vector<std::vector<Step>>(size_t(v)));
  prog.backward.assign(size_t(p), std::vector<std::vector<Step>>(size_t(v)));
  prog.gradients.assign(size_t(p), std::vector<dtsim::replay::ChunkGradients>(size_t(v)));
  for (int64_t st = 0; st < p; ++st)
    for (int64_t c = 0; c < v; ++c) {
      Step f;
      f.kind = Step::Kind::Compute;
      f.seconds = kTf / double(v);
      f.label = "forward";
      Step b = f;
      b.seconds = kTb / double(v);
      b.label = "backward";
      prog.forward[size_t(st)][size_t(c)].push_back(f);
      prog.backward[size_t(st)][size_t(c)].push_back(b);
    }
  prog.optimizer_seconds.assign(size_t(p), 0.0);
  prog.stage_params.assign(size_t(p), 0.0);
  prog.send_bytes = 1;
  return prog;
}

void check_bubble(const std::vector<std::string>& overrides)
{
  auto spec = dtsim::scenario::load_scenario(source_path("tests/unit/data/pipeline.yaml"), overrides);
  const int64_t p = spec.parallel.pp, v = spec.parallel.vpp, m = spec.microbatches;
  auto prog = compute_only_program(p, v);
  auto sched = build_schedule(spec.schedule, p, v, m);
  auto r = dtsim::replay::run_replay(spec, dtsim::parallel::derive_plan(spec), prog, sched, false);
  // Narayanan 2021 Sec. 2.2: ideal m*(tf+tb), bubble (p-1)*(tf+tb)/v.
  const double ideal = double(m) * (kTf + kTb);
  const double expected = (double(m) + double(p - 1) / double(v)) * (kTf + kTb);
  EXPECT_LT(rel_diff(r.step_time_s, expected), 1e-3) << "step " << r.step_time_s << " s, expected " << expected;
  ASSERT_EQ(r.per_stage.size(), size_t(p));
  for (int64_t st = 0; st < p; ++st) {
    const auto& b = r.per_stage[size_t(st)];
    SCOPED_TRACE("stage " + std::to_string(st));
    EXPECT_LT(rel_diff(b.compute_s, ideal), 1e-3);
    const double idle = b.bubble_s + b.exposed_pp_comm_s;
    EXPECT_LT(rel_diff(idle / ideal, double(p - 1) / double(v * m)), 1e-3) << "bubble fraction " << idle / ideal;
    EXPECT_LT(b.exposed_pp_comm_s, 1e-9);
    EXPECT_LT(rel_diff(b.total(), r.step_time_s), 1e-9);
  }
  std::printf("[bubble] %s p=%lld v=%lld m=%lld: step %.9g s (expected %.9g), bubble fraction %.6f (expected %.6f)\n",
              spec.schedule.c_str(), (long long)p, (long long)v, (long long)m, r.step_time_s,
              expected, (r.per_stage[0].bubble_s + r.per_stage[0].exposed_pp_comm_s) / ideal,
              double(p - 1) / double(v * m));
}

TEST(BubbleReplay, GPipe) { check_bubble({"schedule=gpipe"}); }
TEST(BubbleReplay, OneFOneB) { check_bubble({"schedule=1f1b"}); }
TEST(BubbleReplay, OneFOneBManyMicrobatches) { check_bubble({"schedule=1f1b", "training.global_batch=32"}); }
TEST(BubbleReplay, InterleavedTwoChunks) { check_bubble({"schedule=interleaved-1f1b", "parallel.vpp=2"}); }
TEST(BubbleReplay, InterleavedFourChunks)
{
  check_bubble({"schedule=interleaved-1f1b", "parallel.vpp=4", "training.global_batch=16"});
}

// ---- zero-bubble schedules (Qi et al., ICLR 2024, Sec. 2 and Table 2), replayed on a compute-only program whose
// backward is split into input gradients (B) and weight gradients (W) ------------------------------------------

constexpr double kStageF = 1e-3, kStageB = 1.5e-3,
                 kStageW = 0.5e-3;  // forward, B and W of a whole stage for one microbatch

dtsim::replay::StepProgram split_compute_only_program(int64_t p)
{
  auto prog = compute_only_program(p, 1);
  using dtsim::replay::Step;
  prog.backward_input = prog.backward;
  prog.backward_weight = prog.backward;
  for (int64_t st = 0; st < p; ++st) {
    prog.forward[size_t(st)][0][0].seconds = kStageF;
    prog.backward[size_t(st)][0][0].seconds = kStageB + kStageW;
    prog.backward_input[size_t(st)][0][0].seconds = kStageB;
    prog.backward_weight[size_t(st)][0][0].seconds = kStageW;
  }
  return prog;
}

// `extra`: the step's time beyond m (T_F + T_B + T_W), by the paper's bubble formula. Stage 0 starts at 0, so
// its idle time is the whole step's less its work.
void check_zero_bubble(const std::string& schedule, double extra)
{
  auto spec =
      dtsim::scenario::load_scenario(source_path("tests/unit/data/pipeline.yaml"),
                                     {"schedule=" + schedule, "training.global_batch=16", "parallel.pp_overlap=true"});
  const int64_t p = spec.parallel.pp, m = spec.microbatches;
  auto prog = split_compute_only_program(p);
  auto sched = build_schedule(spec.schedule, p, 1, m);
  auto r = dtsim::replay::run_replay(spec, dtsim::parallel::derive_plan(spec), prog, sched, false);
  const double work = double(m) * (kStageF + kStageB + kStageW), expected = work + extra;
  EXPECT_LT(rel_diff(r.step_time_s, expected), 1e-3) << "step " << r.step_time_s << " s, expected " << expected;
  const auto& b = r.per_stage.at(0);
  EXPECT_LT(rel_diff(b.compute_s, work), 1e-3);
  EXPECT_LT(rel_diff(b.bubble_s + b.exposed_pp_comm_s, extra), 1e-3);
  std::printf("[bubble] %s p=%lld m=%lld, T_F %.1f T_B %.1f T_W %.1f ms: step %.9g s (expected %.9g)\n",
              schedule.c_str(), (long long)p, (long long)m, kStageF * 1e3, kStageB * 1e3, kStageW * 1e3, r.step_time_s,
              expected);
}

// 1F1B with the same pieces: its backward runs B and W together, a bubble of (p - 1)(T_F + T_B + T_W).
TEST(ZeroBubbleReplay, OneFOneBBaseline) { check_zero_bubble("1f1b", 3 * (kStageF + kStageB + kStageW)); }
// ZB-H1: (p - 1)(T_F + T_B - T_W).
TEST(ZeroBubbleReplay, H1) { check_zero_bubble("zb-h1", 3 * (kStageF + kStageB - kStageW)); }
// ZB-H2: (p - 1)(T_F + T_B - 2 T_W) idle inside stage 0's span, never less than the pipeline fill (p - 1) T_F in
// one synchronous step (the paper hides the fill across steps; schedule_registry.cpp).
TEST(ZeroBubbleReplay, H2) { check_zero_bubble("zb-h2", 3 * std::max(kStageF, kStageF + kStageB - 2 * kStageW)); }

// ---- equal F, B and W (the zero-bubble papers' handcrafting assumption): each schedule's time over the work, on
// p = 4 stages and m = 16 microbatches, every stage's forward, B and W of one microbatch T = 1 ms each (over two
// chunks, 0.5 ms per chunk) -------------------------------------------------------------------------------------

constexpr double kT = 1e-3;

// `extra`: the step's time beyond m (T_F + T_B + T_W) = 3 m T.
void check_equal_passes(const std::string& schedule, double extra)
{
  const bool v_shape = schedule == "zb-v";
  std::vector<std::string> overrides = {"schedule=" + schedule, "training.global_batch=16", "parallel.pp_overlap=true"};
  if (v_shape)
    overrides.push_back("parallel.vpp=2");
  auto spec = dtsim::scenario::load_scenario(source_path("tests/unit/data/pipeline.yaml"), overrides);
  const int64_t p = spec.parallel.pp, v = spec.parallel.vpp, m = spec.microbatches;
  auto prog = compute_only_program(p, v);
  prog.backward_input = prog.backward;
  prog.backward_weight = prog.backward;
  for (int64_t st = 0; st < p; ++st)
    for (int64_t c = 0; c < v; ++c) {
      prog.forward[size_t(st)][size_t(c)][0].seconds = kT / double(v);
      prog.backward[size_t(st)][size_t(c)][0].seconds = 2 * kT / double(v);
      prog.backward_input[size_t(st)][size_t(c)][0].seconds = kT / double(v);
      prog.backward_weight[size_t(st)][size_t(c)][0].seconds = kT / double(v);
    }
  auto sched = build_schedule(spec.schedule, p, v, m);
  auto r = dtsim::replay::run_replay(spec, dtsim::parallel::derive_plan(spec), prog, sched, false);
  const double work = 3.0 * double(m) * kT;
  EXPECT_LT(std::abs((r.step_time_s - work) - extra), 1e-9) << "over the work " << r.step_time_s - work;
  for (const auto& b : r.per_stage)
    EXPECT_LT(rel_diff(b.compute_s, work), 1e-9);
  std::printf("[bubble] %s p=%lld m=%lld, T_F = T_B = T_W = %.1f ms: step %.9g s, over the work %.6g s (%.2f%%)\n",
              schedule.c_str(), (long long)p, (long long)m, kT * 1e3, r.step_time_s, r.step_time_s - work,
              100.0 * (r.step_time_s - work) / r.step_time_s);
}

// 1F1B: (p - 1)(T_F + T_B + T_W) = 9 T; ZB-H1: (p - 1)(T_F + T_B - T_W) = 3 T; ZB-H2: the fill (p - 1) T_F = 3 T
// (no idle time inside stage 0's span).
TEST(EqualPassesReplay, OneFOneB) { check_equal_passes("1f1b", 9 * kT); }
TEST(EqualPassesReplay, ZbH1) { check_equal_passes("zb-h1", 3 * kT); }
TEST(EqualPassesReplay, ZbH2) { check_equal_passes("zb-h2", 3 * kT); }
// ZB-V: only the V's fill, (p - 1) chunk forwards of T_F / 2 = 1.5 T before the last stage starts, after which
// the last stage never idles: half of ZB-H1's and ZB-H2's, a sixth of 1F1B's. The paper counts a stage's idle time
// from its first unit (zbv.py's stage_bubble) and hides the fill across steps, as for ZB-H2: zero bubble in the
// steady state at 1F1B's memory.
TEST(EqualPassesReplay, ZbV) { check_equal_passes("zb-v", 1.5 * kT); }

// ZB-V with the zero-bubble pieces above (T_F 1, T_B 1.5, T_W 0.5 ms; each chunk half): its order list-scheduled on
// the program's own pass times (replay::pass_times) idles less than ZB-H1's (p - 1)(T_F + T_B - T_W) = 6 ms and
// 1F1B's 9 ms; more than the V's fill of 1.5 ms, since W is too short to fill every gap.
TEST(ZeroBubbleReplay, ZbVOnItsPassTimes)
{
  auto spec = dtsim::scenario::load_scenario(
      source_path("tests/unit/data/pipeline.yaml"),
      {"schedule=zb-v", "parallel.vpp=2", "training.global_batch=16", "parallel.pp_overlap=true"});
  const int64_t p = spec.parallel.pp, m = spec.microbatches;
  auto prog = compute_only_program(p, 2);
  prog.backward_input = prog.backward;
  prog.backward_weight = prog.backward;
  for (int64_t st = 0; st < p; ++st)
    for (size_t c = 0; c < 2; ++c) {
      prog.forward[size_t(st)][c][0].seconds = kStageF / 2;
      prog.backward[size_t(st)][c][0].seconds = (kStageB + kStageW) / 2;
      prog.backward_input[size_t(st)][c][0].seconds = kStageB / 2;
      prog.backward_weight[size_t(st)][c][0].seconds = kStageW / 2;
    }
  const auto times = dtsim::replay::pass_times(prog);
  ASSERT_EQ(times.input_s.size(), size_t(p));
  EXPECT_DOUBLE_EQ(times.input_s[0][1], kStageB / 2);
  auto sched = build_schedule(spec.schedule, p, 2, m, times);
  auto r = dtsim::replay::run_replay(spec, dtsim::parallel::derive_plan(spec), prog, sched, false);
  const double work = double(m) * (kStageF + kStageB + kStageW), extra = r.step_time_s - work;
  EXPECT_LT(extra, double(p - 1) * (kStageF + kStageB - kStageW));
  EXPECT_GE(extra, double(p - 1) * kStageF / 2 - 1e-9);
  std::printf(
      "[bubble] zb-v p=%lld m=%lld, T_F %.1f T_B %.1f T_W %.1f ms, ordered on these times: over the work %.6g s "
      "(zb-h1 %.6g s, 1F1B %.6g s)\n",
      (long long)p, (long long)m, kStageF * 1e3, kStageB * 1e3, kStageW * 1e3, extra,
      double(p - 1) * (kStageF + kStageB - kStageW), double(p - 1) * (kStageF + kStageB + kStageW));
}

// DualPipe (DeepSeek-V3 report, Sec. 3.2.1; deepseek-ai/DualPipe README): each stage runs two chunks, one per
// direction, each a whole stage's layers (T_F, T_B, T_W each); half the microbatches enter at each end. Its README
// bounds the bubble by (pp/2 - 1)(F&B + B - 3W), B a whole backward and F&B a forward and a backward run together.
// Paired (parallel.ep_overlap, the default), an F&B waits for both of its inputs and, with nothing to overlap on a
// compute-only program, takes T_F + T_B + T_W: the README's bound exactly. Apart, the forward starts as soon as
// its own input is there, which leaves less idle time, and both stay below 1F1B's (pp - 1)(T_F + T_B + T_W).
void check_dualpipe(bool paired)
{
  auto spec = dtsim::scenario::load_scenario(
      source_path("tests/unit/data/pipeline.yaml"),
      {"schedule=dualpipe", "training.global_batch=16", "parallel.pp_overlap=true",
       std::string("parallel.ep_overlap=") + (paired ? "true" : "false")});
  const int64_t p = spec.parallel.pp, m = spec.microbatches;
  auto prog = split_compute_only_program(p);
  for (auto* table : {&prog.forward, &prog.backward, &prog.backward_input, &prog.backward_weight})
    for (auto& stage : *table)
      stage.push_back(stage.at(0));  // the second chunk: a copy of a whole stage's layers
  prog.gradients.assign(size_t(p), std::vector<dtsim::replay::ChunkGradients>(2));
  auto sched = build_schedule(spec.schedule, p, 2, m);
  auto r = dtsim::replay::run_replay(spec, dtsim::parallel::derive_plan(spec), prog, sched, false);
  const double work = double(m) * (kStageF + kStageB + kStageW), full_backward = kStageB + kStageW;
  const double bound = double(p / 2 - 1) * ((kStageF + full_backward) + full_backward - 3 * kStageW);
  const double one_f_one_b = double(p - 1) * (kStageF + kStageB + kStageW);
  EXPECT_LT(rel_diff(r.per_stage.at(0).compute_s, work), 1e-3);
  if (paired)
    EXPECT_LT(std::abs((r.step_time_s - work) - bound), 1e-9) << "over the work " << r.step_time_s - work;
  else
    EXPECT_LT(r.step_time_s - work, bound - 1e-4);
  EXPECT_LT(r.step_time_s - work, one_f_one_b);
  std::printf("[bubble] dualpipe %s p=%lld m=%lld: step %.9g s, over the work %.6g s; README bound %.6g s, "
              "1F1B %.6g s\n",
              paired ? "paired" : "apart", (long long)p, (long long)m, r.step_time_s, r.step_time_s - work, bound,
              one_f_one_b);
}

TEST(ZeroBubbleReplay, DualPipePairedMeetsItsBound) { check_dualpipe(true); }
TEST(ZeroBubbleReplay, DualPipeApartWithinItsBound) { check_dualpipe(false); }

// ---- pipeline point-to-point timing: m = 1 under GPipe, so every transfer is on the critical path -----------

// tests/unit/data/slow-network.yaml: NVLink 100 GB/s and 10 us, NIC 200 Gb/s (25 GB/s) and 20 us, efficiency 1.
// A transfer of S bytes takes latency + S / bandwidth (alpha-beta).
constexpr double kSendBytes = 1e6;
constexpr double kNvlinkSend = 10e-6 + kSendBytes / 100e9;  // 20 us
constexpr double kNicSend = 20e-6 + kSendBytes / 25e9;      // 60 us

void check_send_timing(const std::vector<std::string>& overrides, double expected_comm, bool blocking = false)
{
  std::vector<std::string> o = {"hardware=slow-network.yaml", "schedule=gpipe", "training.global_batch=1",
                                blocking ? "parallel.pp_overlap=false" : "parallel.pp_overlap=true"};
  o.insert(o.end(), overrides.begin(), overrides.end());
  auto spec = dtsim::scenario::load_scenario(source_path("tests/unit/data/pipeline.yaml"), o);
  const int64_t p = spec.parallel.pp;
  ASSERT_EQ(spec.microbatches, 1);
  auto prog = compute_only_program(p, 1);
  prog.send_bytes = kSendBytes;
  auto r = dtsim::replay::run_replay(spec, dtsim::parallel::derive_plan(spec), prog,
                                     build_schedule(spec.schedule, p, 1, 1), false);
  // One microbatch goes forward through p stages and back: p * (tf + tb) of compute and 2 (p - 1) transfers.
  const double expected = double(p) * (kTf + kTb) + expected_comm;
  std::printf("[p2p] p=%lld: step %.9g s, expected %.9g s\n", (long long)p, r.step_time_s, expected);
  EXPECT_LT(rel_diff(r.step_time_s, expected), 1e-3);
  // Asynchronous sends: stage 0 waits for one transfer (the gradient back from stage 1), a middle stage for two.
  // Blocking sends (Megatron-LM's default) also wait for their own sends to complete: twice as many.
  const double per_transfer = blocking ? 2 : 1;
  EXPECT_LT(rel_diff(r.per_stage[0].exposed_pp_comm_s, per_transfer * kNvlinkSend), 1e-3)
      << r.per_stage[0].exposed_pp_comm_s;
  EXPECT_LT(rel_diff(r.per_stage[1].exposed_pp_comm_s, per_transfer * 2 * kNvlinkSend), 1e-3)
      << r.per_stage[1].exposed_pp_comm_s;
}

TEST(PipelineSendTiming, WithinOneNode) { check_send_timing({}, 2 * 3 * kNvlinkSend); }
TEST(PipelineSendTiming, WithinOneNodeBlocking) { check_send_timing({}, 2 * 3 * kNvlinkSend, true); }

// 16 stages on two nodes of 8: stage 7 -> 8 crosses the NICs, the 14 other hops stay on NVLink.
TEST(PipelineSendTiming, AcrossTwoNodes)
{
  check_send_timing({"devices=16", "parallel.pp=16"}, 2 * (14 * kNvlinkSend + kNicSend));
}

}  // namespace
