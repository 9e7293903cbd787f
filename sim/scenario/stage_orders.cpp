#include "scenario/stage_orders.hpp"

#include <algorithm>
#include <utility>

namespace dtsim::scenario {

namespace {

// Megatron-LM's chunk and microbatch of the k-th forward (or backward) unit of a stage under interleaving:
// groups of `stages` microbatches go through chunk 0, then chunk 1, ...
std::pair<int64_t, int64_t> interleaved_unit(int64_t k, int64_t stages, int64_t chunks, bool backward)
{
  int64_t group = k % (stages * chunks);
  int64_t chunk = group / stages;
  if (backward)
    chunk = chunks - 1 - chunk;
  int64_t mb = (k / (stages * chunks)) * stages + k % stages;
  return {chunk, mb};
}

}  // namespace

// Warm-up forwards, a steady state of one forward and one backward, cool-down backwards. Interleaving warms up
// longer and pairs each steady-state forward with its backward in one group (Megatron-LM sends and receives for
// the pair together).
std::vector<StageUnit> one_f_one_b_order(int64_t p, int64_t v, int64_t m, int64_t warmup, bool pairs)
{
  const int64_t total = m * v;
  warmup = std::min(warmup, total);
  auto unit = [&](int64_t k, bool bwd) {
    auto [c, mb] = v > 1 ? interleaved_unit(k, p, v, bwd) : std::make_pair(int64_t(0), k);
    return StageUnit{c, mb, bwd, 0};
  };
  std::vector<StageUnit> order;
  int64_t g = 0;
  auto push = [&](StageUnit u, int64_t group) {
    u.group = group;
    order.push_back(u);
  };
  for (int64_t k = 0; k < warmup; ++k)
    push(unit(k, false), g++);
  for (int64_t i = 0; i < total - warmup; ++i) {
    push(unit(warmup + i, false), g);
    if (!pairs)
      ++g;
    push(unit(i, true), g++);
    // Megatron-Core's combined 1F1B (--overlap-moe-expert-parallel-comm) runs the pair's forward and backward as one,
    // each one's all-to-all beside the other's compute (parallel.ep_overlap).
    order.back().beside_previous = pairs;
  }
  for (int64_t i = total - warmup; i < total; ++i)
    push(unit(i, true), g++);
  return order;
}

int64_t peak_in_flight(const std::vector<StageUnit>& order)
{
  int64_t live = 0, peak = 0;
  for (const auto& u : order) {
    if (!u.backward)
      peak = std::max(peak, ++live);
    else if (u.part != BackwardPart::Input)
      --live;
  }
  return peak;
}

}  // namespace dtsim::scenario
