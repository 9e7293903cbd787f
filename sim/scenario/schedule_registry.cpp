#include "scenario/schedule_registry.hpp"

#include <algorithm>
#include <climits>
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

// ---- Zero bubble (Qi et al., "Zero Bubble (Almost) Pipeline Parallelism", ICLR 2024, Sec. 2) -----------------

// Activations a stage holds at its peak: microbatches whose forward has run and whose W has not.
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

StageUnit forward_unit(int64_t mb) { return {0, mb, false, 0, BackwardPart::Whole}; }
StageUnit input_unit(int64_t mb) { return {0, mb, true, 0, BackwardPart::Input}; }
StageUnit weight_unit(int64_t mb) { return {0, mb, true, 0, BackwardPart::Weight}; }

// ZB-H1: 1F1B's warm-up and steady state with each backward split into B and W, stage i holding back its first
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

// ZB-H2: every stage list-scheduled at unit times (T_F = T_B = T_W, the paper's handcrafting assumption): a
// stage that is free runs a B whose gradient has arrived, else a forward while fewer than 2p - 1 microbatches are
// in flight (the paper's memory bound for ZB-H2), else its oldest pending W. The extra warm-up forwards fill the
// start and the pending W passes the end: stage 0 idles (p - 1)(T_F + T_B - 2 T_W) within its own span, none
// when the three are equal (the paper's bubble, Sec. 2.2). A synchronous step still pays the pipeline's fill,
// (p - 1) T_F: the paper hides it across steps with its optimizer post-validation, which one step cannot show.
std::vector<std::vector<StageUnit>> zb_h2_orders(int64_t p, int64_t m)
{
  const int64_t limit = 2 * p - 1;
  constexpr int64_t kNotYet = INT64_MAX;
  std::vector<std::vector<int64_t>> fwd_done(size_t(p), std::vector<int64_t>(size_t(m), kNotYet));
  auto bwd_done = fwd_done;
  std::vector<int64_t> f(size_t(p), 0), b(size_t(p), 0), w(size_t(p), 0);
  auto orders = std::vector<std::vector<StageUnit>>(size_t(p));
  int64_t finished = 0;
  for (int64_t tick = 0; finished < p; ++tick) {
    if (tick > 4 * (3 * m + 2 * p))
      throw InternalError("zb_h2_orders: the list schedule does not finish");
    for (int64_t s = 0; s < p; ++s) {
      const size_t i = size_t(s);
      if (w[i] == m)
        continue;
      auto arrived = [&](const std::vector<std::vector<int64_t>>& done, int64_t stage, int64_t mb) {
        return done[size_t(stage)][size_t(mb)] <= tick;
      };
      const bool b_ready = b[i] < f[i] && (s == p - 1 || arrived(bwd_done, s + 1, b[i]));
      const bool f_ready = f[i] < m && f[i] - w[i] < limit && (s == 0 || arrived(fwd_done, s - 1, f[i]));
      if (b_ready) {
        bwd_done[i][size_t(b[i])] = tick + 1;
        orders[i].push_back(input_unit(b[i]++));
      } else if (f_ready) {
        fwd_done[i][size_t(f[i])] = tick + 1;
        orders[i].push_back(forward_unit(f[i]++));
      } else if (w[i] < b[i]) {
        orders[i].push_back(weight_unit(w[i]++));
        if (w[i] == m)
          ++finished;
      }
    }
  }
  for (auto& order : orders)
    for (size_t i = 0; i < order.size(); ++i)
      order[i].group = int64_t(i);
  return orders;
}

std::vector<StageUnit> zb_h2_order(int64_t st, int64_t p, int64_t, int64_t m) { return zb_h2_orders(p, m)[size_t(st)]; }

int64_t zb_h2_in_flight(int64_t st, int64_t p, int64_t v, int64_t m) { return peak_in_flight(zb_h2_order(st, p, v, m)); }

}  // namespace

const std::vector<ScheduleDef>& schedule_registry()
{
  static const std::vector<ScheduleDef> registry = {
      {Schedule::GPipe, "gpipe", "GPipe: every microbatch's forward, then every backward", false, false, false,
       gpipe_in_flight, gpipe_order},
      {Schedule::OneFOneB, "1f1b", "1F1B (PipeDream-Flush): warm-up forwards, then one forward and one backward",
       false, true, false, f1b1_in_flight, f1b1_order},
      {Schedule::Interleaved, "interleaved-1f1b",
       "interleaved 1F1B: parallel.vpp model chunks per stage, a bubble vpp times smaller", true, true, false,
       interleaved_in_flight, interleaved_order},
      {Schedule::ZbH1, "zb-h1",
       "zero bubble H1: backward split into input and weight gradients, the weight gradients delayed into the "
       "bubble; 1F1B's memory, a third of its bubble when forward, input and weight gradients take equal time",
       false, true, true, zb_h1_in_flight, zb_h1_order},
      {Schedule::ZbH2, "zb-h2",
       "zero bubble H2: as zb-h1 with up to 2p - 1 microbatches in flight, whose extra warm-up forwards leave no "
       "bubble inside a stage's span (the pipeline fill remains in one step)",
       false, true, true, zb_h2_in_flight, zb_h2_order},
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
