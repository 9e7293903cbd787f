// GPipe (Huang et al. 2019): every forward, then every backward.
#include "scenario/stage_orders.hpp"

namespace dtsim::scenario {

namespace {

std::vector<StageUnit> gpipe_order(int64_t, int64_t, int64_t v, int64_t m)
{
  std::vector<StageUnit> order;
  for (int64_t c = 0; c < v; ++c)
    for (int64_t mb = 0; mb < m; ++mb)
      order.push_back({c, mb, false, 0});
  for (int64_t c = v - 1; c >= 0; --c)
    for (int64_t mb = 0; mb < m; ++mb)
      order.push_back({c, mb, true, 0});
  for (size_t i = 0; i < order.size(); ++i)
    order[i].group = int64_t(i);
  return order;
}

int64_t gpipe_in_flight(int64_t, int64_t, int64_t v, int64_t m) { return m * v; }

}  // namespace

ScheduleDef gpipe_schedule()
{
  ScheduleDef d;
  d.name = "gpipe";
  d.summary = "GPipe: every microbatch's forward, then every backward";
  d.in_flight = gpipe_in_flight;
  d.stage_orders = each_stage<gpipe_order>;
  return d;
}

}  // namespace dtsim::scenario
