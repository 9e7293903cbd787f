// Interleaved 1F1B (Narayanan et al. 2021; Megatron-LM's order): parallel.vpp model chunks per stage, a longer
// warm-up, and each steady-state forward paired with its backward.
#include <algorithm>

#include "scenario/stage_orders.hpp"

namespace dtsim::scenario {

namespace {

std::vector<StageUnit> interleaved_order(int64_t st, int64_t p, int64_t v, int64_t m)
{
  return one_f_one_b_order(p, v, m, (p - st - 1) * 2 + (v - 1) * p, true);
}

// Chunk-microbatches held: the warm-up forwards plus the one in progress (Megatron-LM's theoretical memory: a
// factor 1 + (p - 1) / (p v) over 1F1B on the first stage).
int64_t interleaved_in_flight(int64_t st, int64_t p, int64_t v, int64_t m)
{
  return std::min((p - st - 1) * 2 + (v - 1) * p + 1, m * v);
}

}  // namespace

ScheduleDef interleaved_1f1b_schedule()
{
  ScheduleDef d;
  d.name = "interleaved-1f1b";
  d.summary =
      "interleaved 1F1B: parallel.vpp model chunks per stage, a bubble vpp times smaller; its steady state's forward "
      "and backward run as a pair with parallel.ep_overlap (Megatron-Core's combined 1F1B)";
  d.chunked = true;
  d.searched_by_default = true;
  d.pairs_units = true;
  d.in_flight = interleaved_in_flight;
  d.stage_orders = each_stage<interleaved_order>;
  return d;
}

}  // namespace dtsim::scenario
