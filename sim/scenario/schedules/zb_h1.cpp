// ZB-H1 (Qi et al., "Zero Bubble (Almost) Pipeline Parallelism", ICLR 2024, Sec. 2.1): 1F1B with each backward
// split into input gradients (B) and weight gradients (W), the W passes delayed into the bubble.
#include <algorithm>

#include "scenario/stage_orders.hpp"

namespace dtsim::scenario {

namespace {

// 1F1B's warm-up and steady state with each backward split into B and W, stage i holding back its first
// i W passes (the paper's "delayed start of W" that gives every stage the same p microbatches in flight); the
// held-back W passes fill the cool-down. Stage 0 idles (p - 1)(T_F + T_B - T_W) against 1F1B's
// (p - 1)(T_F + T_B + T_W), with 1F1B's peak memory on stage 0 (paper, Sec. 2.1 and Table 2).
std::vector<StageUnit> zb_h1_order(int64_t st, int64_t p, int64_t, int64_t m)
{
  const int64_t warmup = std::min(p - st - 1, m), lag = st;
  std::vector<StageUnit> order;
  int64_t f = 0, b = 0, w = 0;
  auto input_then_weight = [&] {
    order.push_back(input_unit(b++));
    if (b - w > lag)
      order.push_back(weight_unit(w++));
  };
  while (f < warmup)
    order.push_back(forward_unit(f++));
  while (f < m) {
    order.push_back(forward_unit(f++));
    input_then_weight();
  }
  while (b < m)
    input_then_weight();
  while (w < m)
    order.push_back(weight_unit(w++));
  for (size_t i = 0; i < order.size(); ++i)
    order[i].group = int64_t(i);
  return order;
}

int64_t zb_h1_in_flight(int64_t, int64_t p, int64_t, int64_t m) { return std::min(p, m); }

}  // namespace

ScheduleDef zb_h1_schedule()
{
  ScheduleDef d;
  d.name = "zb-h1";
  d.summary =
      "zero bubble H1: backward split into input and weight gradients, the weight gradients delayed into the "
      "bubble; 1F1B's memory, a third of its bubble when forward, input and weight gradients take equal time";
  d.searched_by_default = true;
  d.splits_backward = true;
  d.needs_async_p2p = true;
  d.in_flight = zb_h1_in_flight;
  d.stage_orders = each_stage<zb_h1_order>;
  return d;
}

}  // namespace dtsim::scenario
