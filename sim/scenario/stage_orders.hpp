#pragma once
/// Building blocks of the stage orders that the schedules of scenario/schedules/ share: the kinds of unit, the
/// warm-up, steady state and cool-down of 1F1B, the activations an order holds, and an order per stage.
#include <cstdint>
#include <vector>

#include "scenario/schedule_registry.hpp"

namespace dtsim::scenario {

/// Units of model chunk 0, group 0 (the caller numbers the groups): a forward, a backward's input gradients (B),
/// its weight gradients (W).
inline StageUnit forward_unit(int64_t mb) { return {0, mb, false, 0, BackwardPart::Whole}; }
inline StageUnit input_unit(int64_t mb) { return {0, mb, true, 0, BackwardPart::Input}; }
inline StageUnit weight_unit(int64_t mb) { return {0, mb, true, 0, BackwardPart::Weight}; }

/// Megatron-LM's 1F1B order of `pp` stages over `vpp` chunks and `microbatches` (Narayanan et al. 2021): `warmup`
/// forwards, a steady state of one forward and one backward, cool-down backwards. Over several chunks the units
/// follow Megatron-LM's interleaving; `pairs` puts each steady-state forward and its backward in one group, the
/// backward beside the forward (Megatron-Core's combined 1F1B).
std::vector<StageUnit> one_f_one_b_order(int64_t pp, int64_t vpp, int64_t microbatches, int64_t warmup, bool pairs);

/// Activations a stage holds at its peak under `order`: microbatches whose forward has run and whose W (or whole
/// backward) has not.
int64_t peak_in_flight(const std::vector<StageUnit>& order);

/// The orders of a schedule whose stages' orders are each a function of the stage alone.
template <std::vector<StageUnit> (*order)(int64_t, int64_t, int64_t, int64_t)>
std::vector<std::vector<StageUnit>> each_stage(int64_t p, int64_t v, int64_t m)
{
  std::vector<std::vector<StageUnit>> orders;
  for (int64_t st = 0; st < p; ++st)
    orders.push_back(order(st, p, v, m));
  return orders;
}

}  // namespace dtsim::scenario
