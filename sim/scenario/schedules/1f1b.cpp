// 1F1B, PipeDream-Flush (Narayanan et al. 2021; Megatron-LM's order): stage i warms up with pp - i - 1 forwards,
// then runs one forward and one backward.
#include <algorithm>

#include "scenario/stage_orders.hpp"

namespace dtsim::scenario {

namespace {

std::vector<StageUnit> f1b1_order(int64_t st, int64_t p, int64_t v, int64_t m)
{
  return one_f_one_b_order(p, v, m, p - st - 1, false);
}

int64_t f1b1_in_flight(int64_t st, int64_t p, int64_t, int64_t m) { return std::min(p - st, m); }

}  // namespace

ScheduleDef one_f_one_b_schedule()
{
  ScheduleDef d;
  d.name = "1f1b";
  d.summary = "1F1B (PipeDream-Flush): warm-up forwards, then one forward and one backward";
  d.searched_by_default = true;
  d.in_flight = f1b1_in_flight;
  d.stage_orders = each_stage<f1b1_order>;
  return d;
}

}  // namespace dtsim::scenario
