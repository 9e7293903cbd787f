// DualPipe (DeepSeek-AI, DeepSeek-V3 Technical Report, arXiv 2412.19437, Sec. 3.2.1): microbatches fed from both
// ends through two copies of the layers, forward and backward chunks paired.
#include <algorithm>
#include <array>
#include <deque>
#include <utility>

#include "scenario/stage_orders.hpp"

namespace dtsim::scenario {

namespace {

// The eight steps of DualPipe's order on one stage, as its reference implementation runs them
// (deepseek-ai/DualPipe dualpipe/dualpipe.py, DualPipe.step, commit 3da1bbe). Phase 0 is the direction that starts on
// this stage's side: the first half of the stages (h = their distance to the nearer end) see their own direction
// as phase 0, the second half the other. A group is what the implementation runs between two of its
// commit-and-wait points (batched sends and receives, as Megatron-LM's exchange): one chunk, a paired "F&B" (a
// forward of one direction beside a backward of the other), or in step 3 a W with the forward after it. DeepSeek
// overlaps a pair's computation with its communication: the backward of an F&B is marked beside_previous, and the
// replay runs the two as a pair (parallel.ep_overlap). Pipeline transfers are asynchronous (parallel.pp_overlap):
// with the chunks apart and blocking exchanges at those points, the test pipeline of schedule_test.cpp idles 6.5 ms
// where the README bounds DualPipe's bubble by 3.5 ms (asynchronous: 2.0 ms). Backward units marked
// zero bubble split into B and a W the order runs
// later (oldest first); the others run whole.
std::vector<StageUnit> dualpipe_order(int64_t st, int64_t p, int64_t, int64_t m)
{
  const int64_t half = m / 2, halves = p / 2, h = std::min(st, p - 1 - st);
  const bool second_half = st >= halves;
  std::array<int64_t, 2> f{0, 0}, b{0, 0};
  std::deque<std::pair<int64_t, int64_t>> weights;  // (chunk, microbatch) of pending W, oldest first
  std::vector<StageUnit> order;
  int64_t group = 0;
  auto chunk_of = [&](int phase) { return int64_t(phase ^ (second_half ? 1 : 0)); };
  auto forward = [&](int phase) {
    const int64_t c = chunk_of(phase);
    order.push_back({c, f[size_t(c)]++, false, group, BackwardPart::Whole});
  };
  auto backward = [&](int phase, bool zero_bubble) {
    const int64_t c = chunk_of(phase), mb = b[size_t(c)]++;
    order.push_back({c, mb, true, group, zero_bubble ? BackwardPart::Input : BackwardPart::Whole});
    if (zero_bubble)
      weights.push_back({c, mb});
  };
  auto weight = [&] {
    auto [c, mb] = weights.front();
    weights.pop_front();
    order.push_back({c, mb, true, group, BackwardPart::Weight});
  };
  auto next = [&] { ++group; };
  // A forward and then a backward of the other direction in one group: the reference runs them as one overlapped
  // chunk (DualPipe._forward_backward_chunk calls the model's overlapped_forward_backward).
  auto forward_backward = [&](int forward_phase) {
    forward(forward_phase);
    backward(1 - forward_phase, false);
    order.back().beside_previous = true;
  };
  for (int64_t i = 0; i < (halves - h - 1) * 2; ++i, next())  // 1: forwards of phase 0
    forward(0);
  for (int64_t i = 0; i < h + 1; ++i) {  // 2: forwards of both phases
    forward(0), next();
    forward(1), next();
  }
  for (int64_t i = 0; i < halves - h - 1; ++i) {  // 3: B, W, F of phase 1
    backward(1, true), next();
    weight(), forward(1), next();
  }
  for (int64_t i = 0; i < half - p + h + 1; ++i) {  // 4, the main step: F0&B1, F1&B0
    forward_backward(0), next();
    forward_backward(1), next();
  }
  for (int64_t i = 0; i < halves - h - 1; ++i) {  // 5: B1, F1&B0
    backward(1, false), next();
    forward_backward(1), next();
  }
  bool zero_bubble = false;  // 6: B1, B0, the later half of them zero bubble
  for (int64_t i = 0; i < h + 1; ++i) {
    if (i == (h + 1) / 2 && h % 2 == 1)
      zero_bubble = true;
    backward(1, zero_bubble), next();
    if (i == (h + 1) / 2 && h % 2 == 0)
      zero_bubble = true;
    backward(0, zero_bubble), next();
  }
  for (int64_t i = 0; i < halves - h - 1; ++i) {  // 7: W, B0 zero bubble
    weight(), next();
    backward(0, true), next();
  }
  while (!weights.empty())  // 8: the remaining W
    weight(), next();
  return order;
}

int64_t dualpipe_in_flight(int64_t st, int64_t p, int64_t v, int64_t m)
{
  return peak_in_flight(dualpipe_order(st, p, v, m));
}

}  // namespace

ScheduleDef dualpipe_schedule()
{
  ScheduleDef d;
  d.name = "dualpipe";
  d.summary =
      "DualPipe (DeepSeek-V3): microbatches fed from both ends through two copies of the layers, forward and "
      "backward chunks paired; pp + 1 chunk activations, twice the parameters";
  d.searched_by_default = true;
  d.splits_backward = true;
  d.needs_async_p2p = true;
  d.two_directions = true;
  d.pairs_units = true;
  d.pairs_by_default = true;
  d.in_flight = dualpipe_in_flight;
  d.stage_orders = each_stage<dualpipe_order>;
  return d;
}

}  // namespace dtsim::scenario
