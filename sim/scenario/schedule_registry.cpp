#include "scenario/schedule_registry.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <deque>
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
std::vector<StageUnit> one_f_one_b(int64_t p, int64_t v, int64_t m, int64_t warmup, bool pairs)
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

std::vector<StageUnit> f1b1_order(int64_t st, int64_t p, int64_t v, int64_t m)
{
  return one_f_one_b(p, v, m, p - st - 1, false);
}

int64_t f1b1_in_flight(int64_t st, int64_t p, int64_t, int64_t m) { return std::min(p - st, m); }

std::vector<StageUnit> interleaved_order(int64_t st, int64_t p, int64_t v, int64_t m)
{
  return one_f_one_b(p, v, m, (p - st - 1) * 2 + (v - 1) * p, true);
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

std::vector<std::vector<StageUnit>> zb_h2_all(int64_t p, int64_t, int64_t m) { return zb_h2_orders(p, m); }

// Every stage fills up to the bound: the last stage runs a forward and its B alternately and defers its W while
// forwards remain, the others catch up (the registry test walks the orders to check it).
int64_t zb_h2_in_flight(int64_t, int64_t p, int64_t, int64_t m) { return std::min(2 * p - 1, m); }

// ---- DualPipe (DeepSeek-AI, DeepSeek-V3 Technical Report, arXiv 2412.19437, Sec. 3.2.1) ------------------------

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

// The orders of a schedule whose stages' orders are each a function of the stage alone.
template <std::vector<StageUnit> (*order)(int64_t, int64_t, int64_t, int64_t)>
std::vector<std::vector<StageUnit>> each_stage(int64_t p, int64_t v, int64_t m)
{
  std::vector<std::vector<StageUnit>> orders;
  for (int64_t st = 0; st < p; ++st)
    orders.push_back(order(st, p, v, m));
  return orders;
}

}  // namespace

const std::vector<ScheduleDef>& schedule_registry()
{
  static const std::vector<ScheduleDef> registry = {
      {Schedule::GPipe, "gpipe", "GPipe: every microbatch's forward, then every backward", false, false, false,
       false, false, false, false, gpipe_in_flight, each_stage<gpipe_order>},
      {Schedule::OneFOneB, "1f1b", "1F1B (PipeDream-Flush): warm-up forwards, then one forward and one backward",
       false, true, false, false, false, false, false, f1b1_in_flight, each_stage<f1b1_order>},
      {Schedule::Interleaved, "interleaved-1f1b",
       "interleaved 1F1B: parallel.vpp model chunks per stage, a bubble vpp times smaller; its steady state's forward "
       "and backward run as a pair with parallel.ep_overlap (Megatron-Core's combined 1F1B)",
       true, true, false, false, false, true, false, interleaved_in_flight, each_stage<interleaved_order>},
      {Schedule::ZbH1, "zb-h1",
       "zero bubble H1: backward split into input and weight gradients, the weight gradients delayed into the "
       "bubble; 1F1B's memory, a third of its bubble when forward, input and weight gradients take equal time",
       false, true, true, true, false, false, false, zb_h1_in_flight, each_stage<zb_h1_order>},
      {Schedule::ZbH2, "zb-h2",
       "zero bubble H2: as zb-h1 with up to 2p - 1 microbatches in flight, whose extra warm-up forwards leave no "
       "bubble inside a stage's span (the pipeline fill remains in one step)",
       false, true, true, true, false, false, false, zb_h2_in_flight, zb_h2_all},
      {Schedule::DualPipe, "dualpipe",
       "DualPipe (DeepSeek-V3): microbatches fed from both ends through two copies of the layers, forward and "
       "backward chunks paired; pp + 1 chunk activations, twice the parameters",
       false, true, true, true, true, true, true, dualpipe_in_flight, each_stage<dualpipe_order>},
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
