#include "scenario/schedule_registry.hpp"

#include <algorithm>
#include <utility>

#include "core/diagnostics.hpp"

namespace dtsim::scenario {

namespace {

// ---- GPipe (Huang et al. 2019): every forward, then every backward ----------------------------------------------

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

// ---- 1F1B and interleaved 1F1B (Narayanan et al. 2021; Megatron-LM's orders) ------------------------------------

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

// Warm-up forwards, a steady state of one forward and one backward, cool-down backwards. Interleaving warms up
// longer and pairs each steady-state forward with its backward in one group (Megatron-LM sends and receives for
// the pair together).
std::vector<StageUnit> one_f_one_b(int64_t st, int64_t p, int64_t v, int64_t m, int64_t warmup, bool pairs)
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
  }
  for (int64_t i = total - warmup; i < total; ++i)
    push(unit(i, true), g++);
  return order;
}

std::vector<StageUnit> f1b1_order(int64_t st, int64_t p, int64_t v, int64_t m)
{
  return one_f_one_b(st, p, v, m, p - st - 1, false);
}

int64_t f1b1_in_flight(int64_t st, int64_t p, int64_t, int64_t m) { return std::min(p - st, m); }

std::vector<StageUnit> interleaved_order(int64_t st, int64_t p, int64_t v, int64_t m)
{
  return one_f_one_b(st, p, v, m, (p - st - 1) * 2 + (v - 1) * p, true);
}

// Chunk-microbatches held: the warm-up forwards plus the one in progress (Megatron-LM's theoretical memory: a
// factor 1 + (p - 1) / (p v) over 1F1B on the first stage).
int64_t interleaved_in_flight(int64_t st, int64_t p, int64_t v, int64_t m)
{
  return std::min((p - st - 1) * 2 + (v - 1) * p + 1, m * v);
}

}  // namespace

const std::vector<ScheduleDef>& schedule_registry()
{
  static const std::vector<ScheduleDef> registry = {
      {Schedule::GPipe, "gpipe", "GPipe: every microbatch's forward, then every backward", false, false,
       gpipe_in_flight, gpipe_order},
      {Schedule::OneFOneB, "1f1b", "1F1B (PipeDream-Flush): warm-up forwards, then one forward and one backward",
       false, true, f1b1_in_flight, f1b1_order},
      {Schedule::Interleaved, "interleaved-1f1b",
       "interleaved 1F1B: parallel.vpp model chunks per stage, a bubble vpp times smaller", true, true,
       interleaved_in_flight, interleaved_order},
  };
  return registry;
}

const ScheduleDef& schedule_def(Schedule id)
{
  for (const auto& d : schedule_registry())
    if (d.id == id)
      return d;
  throw InternalError("schedule_def: a schedule missing from the registry");
}

const ScheduleDef* find_schedule(const std::string& name)
{
  for (const auto& d : schedule_registry())
    if (name == d.name)
      return &d;
  return nullptr;
}

std::vector<std::string> schedule_names()
{
  std::vector<std::string> names;
  for (const auto& d : schedule_registry())
    names.push_back(d.name);
  return names;
}

}  // namespace dtsim::scenario
