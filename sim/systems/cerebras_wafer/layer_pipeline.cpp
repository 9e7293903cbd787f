// Layer-pipelined execution of one training step (see wafer_replay.hpp).
#include "systems/cerebras_wafer/wafer_hardware.hpp"
#include "systems/cerebras_wafer/layer_pipeline.hpp"

#include <algorithm>
#include <numeric>

namespace dtsim::wafer {

namespace sg4 = simgrid::s4u;
using replay::Activities;

std::vector<Region> map_regions(const WaferProgram& p, int tiles)
{
  const int64_t units = int64_t(p.units.size());
  const int64_t groups = std::min<int64_t>(units, tiles);
  auto work = [&](int64_t u) { return p.units[size_t(u)].fwd_s + p.units[size_t(u)].bwd_s +
                                      p.units[size_t(u)].recompute_s; };
  double total = 0;
  for (int64_t u = 0; u < units; ++u)
    total += work(u);
  // Contiguous groups of balanced work: close a group when it reaches its share, keeping one unit for each of
  // the groups still to fill.
  std::vector<Region> regions;
  double target = total / double(groups), acc = 0;
  Region cur;
  for (int64_t u = 0; u < units; ++u) {
    cur.units.push_back(u);
    acc += work(u);
    const int64_t left_units = units - u - 1, left_groups = groups - int64_t(regions.size()) - 1;
    if ((acc >= target && left_groups > 0) || left_units == left_groups) {
      if (left_groups > 0 || left_units == 0) {
        regions.push_back(cur);
        cur = Region{};
        acc = 0;
      }
    }
  }
  if (!cur.units.empty())
    regions.push_back(cur);
  // Tiles in proportion to work, at least one each.
  std::vector<double> w(regions.size(), 0);
  for (size_t g = 0; g < regions.size(); ++g)
    for (int64_t u : regions[g].units)
      w[g] += work(u);
  int given = 0;
  for (size_t g = 0; g < regions.size(); ++g) {
    regions[g].tiles = std::max(1, int(double(tiles) * w[g] / total));
    given += regions[g].tiles;
  }
  while (given > tiles) {  // rounding up the small ones may overshoot: take from the largest
    auto it = std::max_element(regions.begin(), regions.end(),
                               [](const Region& a, const Region& b) { return a.tiles < b.tiles; });
    --it->tiles;
    --given;
  }
  while (given < tiles) {  // hand out what is left to the busiest per tile
    size_t best = 0;
    for (size_t g = 1; g < regions.size(); ++g)
      if (w[g] / regions[g].tiles > w[best] / regions[best].tiles)
        best = g;
    ++regions[best].tiles;
    ++given;
  }
  int first = 0;
  for (auto& r : regions) {
    r.first_tile = first;
    first += r.tiles;
    const double share = double(tiles) / double(r.tiles) / double(p.pass_batch);
    for (int64_t u : r.units) {
      const auto& unit = p.units[size_t(u)];
      r.fwd_s += unit.fwd_s * share;
      r.bwd_s += (unit.bwd_s + unit.recompute_s) * share;
      r.out_bytes = unit.out_bytes / double(p.pass_batch);
    }
    r.label = p.units[size_t(r.units.front())].label +
              (r.units.size() > 1 ? " .. " + p.units[size_t(r.units.back())].label : "");
  }
  return regions;
}

LayerPipeline::LayerPipeline(Activities& acts, const scenario::ScenarioSpec& s, const WaferProgram& p,
                             const WaferPlatform& pf, bool trace)
    : acts_(acts), s_(s), p_(p), pf_(pf), trace_(trace)
{
  regions_ = map_regions(p, pf.rows() * pf.cols());
  st_.resize(regions_.size());
  samples_ = size_t(p.pass_batch);
}

// Snake order: even rows west to east, odd rows east to west, so consecutive tiles are neighbours.
sg4::Host* LayerPipeline::host_of(size_t g, bool last) const
{
  int i = regions_[g].first_tile + (last ? regions_[g].tiles - 1 : 0);
  int r = i / pf_.cols(), c = i % pf_.cols();
  if (r % 2 == 1)
    c = pf_.cols() - 1 - c;
  return pf_.tile(0, r, c);
}

void LayerPipeline::start()
{
  for (size_t g = 0; g < regions_.size(); ++g)
    pump(g);
}

// A region runs, per pass, the forwards of the pass's samples in order, then their backwards.
void LayerPipeline::pump(size_t g)
{
  State& st = st_[g];
  const size_t per_pass = samples_, passes = size_t(p_.passes);
  if (st.busy || st.bwd_done >= per_pass * passes)
    return;
  const size_t pass_f = st.fwd_done / per_pass, pass_b = st.bwd_done / per_pass;
  const bool backward = pass_f > pass_b;  // this pass's forwards are done
  const size_t n = backward ? st.bwd_done : st.fwd_done;
  const bool first = g == 0, last = g + 1 == regions_.size();
  bool ready;
  if (!backward)
    ready = first || st.fwd_ready > n;
  else
    ready = last || st.bwd_ready > n;
  if (!ready)
    return;
  const double now = Activities::now();
  if (now > st.free_t) {  // waited for an input: moving data, or another region's work
    const double moving_from = std::max(st.free_t, st.arrival_start_t);
    st.b.exposed_pp_comm_s += std::max(0.0, now - moving_from);
    st.b.bubble_s += std::min(now, moving_from) - st.free_t;
  }
  st.busy = true;
  const Region& r = regions_[g];
  acts_.exec(host_of(g, false), backward ? r.bwd_s : r.fwd_s, [this, g, backward, now]() {
    State& st = st_[g];
    const double end = Activities::now();
    st.b.compute_s += end - now;
    trace_.add(int64_t(g), 0, regions_[g].label, now, end);
    st.busy = false;
    st.free_t = end;
    if (backward)
      ++st.bwd_done;
    else
      ++st.fwd_done;
    if (!backward && g + 1 < regions_.size())
      hand_off(g, g + 1, false);
    if (backward && g > 0)
      hand_off(g, g - 1, true);
    if (st.bwd_done == samples_ * size_t(p_.passes))
      sync_and_update(g);
    else
      pump(g);
  });
}

void LayerPipeline::hand_off(size_t from, size_t to, bool backward)
{
  const double t0 = Activities::now();
  sg4::Host* a = backward ? host_of(from, false) : host_of(from, true);
  sg4::Host* b = backward ? host_of(to, true) : host_of(to, false);
  acts_.comm(a, b, regions_[backward ? to : from].out_bytes, [this, to, backward, t0]() {
    State& st = st_[to];
    static const std::string label = "activations to the next region";
    trace_.add(int64_t(to), 1, label, t0, Activities::now());
    st.arrival_start_t = t0;
    if (backward)
      ++st.bwd_ready;
    else
      ++st.fwd_ready;
    pump(to);
  });
}

// After its last backward a region sums its gradients with the other systems' through SwarmX (up, then down),
// then updates its weights in SRAM.
void LayerPipeline::sync_and_update(size_t g)
{
  const Region& r = regions_[g];
  double params = 0;
  for (int64_t u : r.units)
    params += p_.units[size_t(u)].params;
  const double t0 = Activities::now();
  auto update = [this, g, params, t0]() {
    State& st = st_[g];
    const double t1 = Activities::now();
    st.b.exposed_dp_comm_s += t1 - t0;
    const auto& w = systems::wafer_hardware(s_.hardware).wafer;
    const double sram_share = w.sram_bw_Bps * double(regions_[g].tiles) / double(pf_.rows() * pf_.cols());
    acts_.exec(host_of(g, false), params * p_.optimizer_bytes_per_param / sram_share, [this, g, t1]() {
      State& st = st_[g];
      st.done_t = Activities::now();
      st.b.optimizer_s += st.done_t - t1;
      ++done_count_;
    });
  };
  if (s_.parallel.dp == 1) {
    update();
    return;
  }
  const int col = int(g % size_t(pf_.cols()));
  auto phase = [this, col, params](bool up, std::function<void()> next) {
    std::vector<std::pair<sg4::Host*, sg4::Host*>> ends;
    sg4::Host* exit_tile = pf_.tile(0, pf_.rows() - 1, col);
    ends.push_back(up ? std::make_pair(exit_tile, pf_.parent_of(0)) : std::make_pair(pf_.parent_of(0), exit_tile));
    for (const auto& e : pf_.edges())
      if (e.child != nullptr)
        ends.push_back(up ? std::make_pair(e.child, e.parent) : std::make_pair(e.parent, e.child));
    auto pending = std::make_shared<size_t>(ends.size());
    for (const auto& [a, b] : ends)
      acts_.comm(a, b, params * 2, [pending, next]() {
        if (--*pending == 0)
          next();
      });
  };
  phase(true, [phase, update]() { phase(false, update); });
}

replay::ReplayResult LayerPipeline::finish()
{
  replay::ReplayResult r;
  for (const auto& st : st_)
    r.step_time_s = std::max(r.step_time_s, st.done_t);
  for (auto& st : st_) {
    st.b.bubble_s += r.step_time_s - st.done_t;
    r.average += st.b;
  }
  r.average /= double(st_.size());
  r.per_stage.push_back(r.average);
  r.simulated_devices = 1;
  r.activities = acts_.count();
  r.links = pf_.link_count();
  r.trace = trace_.take();
  return r;
}


}  // namespace dtsim::wafer
