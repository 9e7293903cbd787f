// ZB-V (Qi et al., "Pipeline Parallelism with Controllable Memory", NeurIPS 2024, arXiv 2405.15362, Sec. 3 and 4;
// first in "Zero Bubble (Almost) Pipeline Parallelism", ICLR 2024, appendix): two chunks per stage placed in a V
// (ScheduleDef::chunk_placement), each backward split into B and W, at most 2 pp chunk activations per stage.
#include <algorithm>
#include <array>
#include <deque>
#include <limits>
#include <set>
#include <utility>

#include "core/diagnostics.hpp"
#include "scenario/stage_orders.hpp"

namespace dtsim::scenario {

namespace {

// Every stage list-scheduled on the passes' times under the paper's memory limit of 2 pp chunk activations per stage (a
// chunk's activations are held from its F to its W). Whenever a stage is free it runs, in this order of preference: a
// forward of chunk 1 (the way back up, closer to the loss), a forward of chunk 0 (never into the last place, see
// below), while the limit allows; else the B of chunk 0, then of chunk 1, whose gradient has arrived; else its oldest
// pending W; else it waits for the next pass to end anywhere. The reference implementation builds its ZB-V order the
// same way, greedily over the stages on profiled F, B and W times and under the same limit, filling bubbles with
// pending W passes (sail-sg/zero-bubble-pipeline-parallelism,
// megatron/core/pipeline_parallel/zerobubble/scheduler/zbv.py, PipelineGraph.try_v_schedule, commit 064369d); this
// preference order is dtsim's own. A V's order built at unit times is tight: replayed with B three times W it idles
// longer than 1F1B (docs/parallelism.md), so the replay's order is built on the step program's own times (PassTimes),
// unit times serving the checks. Dependencies: chunk 0's forward needs the stage above's (stage i - 1), chunk 1's the
// stage below's (the last stage: its own chunk 0's); chunk 1's B needs the stage above's (the first stage: its own
// forward of chunk 1, the loss), chunk 0's B the stage below's (the last stage: its own chunk 1's B).
std::vector<std::vector<StageUnit>> zb_v_timed_orders(int64_t p, int64_t, int64_t m, const PassTimes& times)
{
  const int64_t limit = 2 * p;
  constexpr double kNotYet = std::numeric_limits<double>::infinity();
  auto seconds = [&](int pass, int64_t stage, int64_t chunk) {
    if (times.empty())
      return 1.0;
    const auto& table = pass == 0 ? times.forward_s : pass == 1 ? times.input_s : times.weight_s;
    return table.at(size_t(stage)).at(size_t(chunk));
  };
  // Passes that end within a billionth of the shortest pass of each other end together: sums of the same times in
  // another order differ in their last bits, and a gradient that "arrives" a rounding error late would send the
  // stage to other work (on the pieces of schedule_test.cpp, 8 ms of idle time where 2.75 ms is due).
  double shortest = 1.0;
  for (const auto* table : {&times.forward_s, &times.input_s, &times.weight_s})
    for (const auto& stage : *table)
      for (double x : stage)
        if (x > 0)
          shortest = std::min(shortest, x);
  const double tolerance = 1e-9 * shortest;
  // ends[pass][chunk][stage][mb]: when the F (pass 0) or B (pass 1) ends.
  auto table = std::vector<std::vector<double>>(size_t(p), std::vector<double>(size_t(m), kNotYet));
  std::array<std::array<std::vector<std::vector<double>>, 2>, 2> ends{{{table, table}, {table, table}}};
  struct StageState {
    std::array<int64_t, 2> f{0, 0}, b{0, 0};          // next microbatch of each chunk's F and B
    std::deque<std::pair<int64_t, int64_t>> weights;  // (chunk, microbatch) of pending W, oldest first
    int64_t live = 0, weights_done = 0;               // chunk activations held; W run
    double free_at = 0;                               // when the stage is next free
    int64_t turn = 0;                                 // ties of free_at: the stage that waited longest goes first
  };
  auto stages = std::vector<StageState>(size_t(p));
  auto orders = std::vector<std::vector<StageUnit>>(size_t(p));
  std::set<double> pass_ends;  // every scheduled pass's end: when a waiting stage looks again
  int64_t finished = 0, turns = 0, stuck = 0;  // stuck: free stages in a row with nothing to run or wait for
  while (finished < p) {
    // The free stage that comes first: every pass ending by then is already scheduled (the others start later).
    int64_t s = -1;
    for (int64_t i = 0; i < p; ++i) {
      const StageState& c = stages[size_t(i)];
      if (c.weights_done < 2 * m &&
          (s < 0 ||
           std::make_pair(c.free_at, c.turn) < std::make_pair(stages[size_t(s)].free_at, stages[size_t(s)].turn)))
        s = i;
    }
    StageState& st = stages[size_t(s)];
    const double now = st.free_at;
    auto arrived = [&](int pass, int64_t chunk, int64_t stage, int64_t mb) {
      return ends[size_t(pass)][size_t(chunk)][size_t(stage)][size_t(mb)] <= now + tolerance;
    };
    auto ready = [&](int pass, int64_t c) {
      const int64_t mb = pass == 0 ? st.f[size_t(c)] : st.b[size_t(c)];
      if (mb >= m)
        return false;
      if (pass == 0 && c == 0)
        return s == 0 || arrived(0, 0, s - 1, mb);
      if (pass == 0)
        return s == p - 1 ? arrived(0, 0, s, mb) : arrived(0, 1, s + 1, mb);
      if (c == 1)
        return s == 0 ? arrived(0, 1, s, mb) : arrived(1, 1, s - 1, mb);
      return s == p - 1 ? arrived(1, 1, s, mb) : arrived(1, 0, s + 1, mb);
    };
    auto run = [&](int pass, int64_t c) {
      int64_t& next = pass == 0 ? st.f[size_t(c)] : st.b[size_t(c)];
      const int64_t mb = next++;
      st.free_at = now + seconds(pass, s, c);
      ends[size_t(pass)][size_t(c)][size_t(s)][size_t(mb)] = st.free_at;
      pass_ends.insert(st.free_at);
      if (pass == 0) {
        ++st.live;
        orders[size_t(s)].push_back({c, mb, false, 0, BackwardPart::Whole});
      } else {
        st.weights.push_back({c, mb});
        orders[size_t(s)].push_back({c, mb, true, 0, BackwardPart::Input});
      }
    };
    const bool room = st.live < limit;
    // A forward of chunk 0 holds a place for its chunk 1 forward to come: a stage full of chunk 0 activations that
    // all wait for their chunk 1 forward could run nothing again (none of them reaches its B, hence its W), so the
    // last place is never taken by one. Orders that never came near it (every order at unit times) are unchanged.
    const bool room_for_chunk0 = room && st.f[0] - st.f[1] + 1 < limit;
    if (room && ready(0, 1))
      run(0, 1);
    else if (room_for_chunk0 && ready(0, 0))
      run(0, 0);
    else if (ready(1, 0))
      run(1, 0);
    else if (ready(1, 1))
      run(1, 1);
    else if (!st.weights.empty()) {
      auto [c, mb] = st.weights.front();
      st.weights.pop_front();
      orders[size_t(s)].push_back({c, mb, true, 0, BackwardPart::Weight});
      st.free_at = now + seconds(2, s, c);
      pass_ends.insert(st.free_at);
      --st.live;
      if (++st.weights_done == 2 * m)
        ++finished;
    } else {
      // Nothing to run: wait for the next pass to end, or, if none ends later, let the other free stages go first
      // (when every one of them has found nothing either, none can ever run: a bug).
      const auto next = pass_ends.upper_bound(now + tolerance);
      st.turn = ++turns;
      if (next != pass_ends.end()) {
        st.free_at = *next;
        stuck = 0;
      } else if (++stuck > p) {
        throw InternalError("zb_v_orders: no stage can run a pass");
      }
      continue;
    }
    stuck = 0;
  }
  for (auto& order : orders)
    for (size_t i = 0; i < order.size(); ++i)
      order[i].group = int64_t(i);
  return orders;
}

std::vector<std::vector<StageUnit>> zb_v_orders(int64_t p, int64_t v, int64_t m)
{
  return zb_v_timed_orders(p, v, m, PassTimes{});
}

// Every stage fills up to the limit once m >= pp: 2 pp chunk activations of half a stage's layers each, the
// activations of pp whole microbatches, 1F1B's first stage (the paper's claim); fewer microbatches fill 2 m. The
// registry test walks the unit-time orders to check it; an order built on other times never holds more (the limit),
// so the memory model stays an upper bound there.
int64_t zb_v_in_flight(int64_t, int64_t p, int64_t, int64_t m) { return 2 * std::min(p, m); }

}  // namespace

ScheduleDef zb_v_schedule()
{
  ScheduleDef d;
  d.name = "zb-v";
  d.summary =
      "zero bubble V: two chunks per stage placed in a V (parallel.vpp 2), backward split into input and weight "
      "gradients; 1F1B's peak activations, a bubble of the V's fill only when forward, input and weight gradients "
      "take equal time";
  d.chunked = true;
  d.chunk_placement = ChunkPlacement::V;
  d.searched_by_default = true;
  d.splits_backward = true;
  d.needs_async_p2p = true;
  d.in_flight = zb_v_in_flight;
  d.stage_orders = zb_v_orders;
  d.timed_stage_orders = zb_v_timed_orders;
  return d;
}

}  // namespace dtsim::scenario
