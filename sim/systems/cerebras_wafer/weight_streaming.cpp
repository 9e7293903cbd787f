// Weight-streaming execution of one training step (see wafer_replay.hpp).
#include "systems/cerebras_wafer/wafer_hardware.hpp"
#include "systems/cerebras_wafer/weight_streaming.hpp"

#include <algorithm>

namespace dtsim::wafer {

namespace sg4 = simgrid::s4u;
using replay::Activities;

WeightStreaming::WeightStreaming(Activities& acts, const scenario::ScenarioSpec& s, const WaferProgram& p,
                                 const WaferPlatform& pf, bool trace)
    : acts_(acts), s_(s), p_(p), pf_(pf), trace_(trace)
{
  // Folded (default): system 0 is simulated; the others do the same work on links of their own, and the
  // SwarmX tree above the leaves carries each transfer once whatever the number of systems.
  const int64_t systems = s.parallel.dp;
  for (int64_t x = 0; x < (s.fidelity == scenario::Fidelity::Full ? systems : 1); ++x) {
    System sys;
    sys.id = x;
    sys_.push_back(sys);
  }
  const int64_t units = int64_t(p.units.size());
  for (int64_t pass = 0; pass < p.passes; ++pass) {
    const bool last_pass = pass + 1 == p.passes;
    const size_t base = work_.size();
    // forward u at base + u, backward u at base + 2 units - 1 - u
    for (int64_t u = 0; u < units; ++u)
      work_.push_back({u, false, last_pass, 0, p.units[size_t(u)].offloaded_input_bytes,
                       base + size_t(2 * units - 1 - u)});
    for (int64_t u = units - 1; u >= 0; --u)
      work_.push_back({u, true, last_pass, 0, p.units[size_t(u)].offloaded_input_bytes, base + size_t(u)});
  }
  for (auto& sys : sys_) {
    sys.written.assign(work_.size(), 0);
    sys.reads.assign(work_.size(), ReadState::None);
  }
  // A unit that runs twice in a row (the head: forward then backward) keeps its weights on the wafer.
  for (size_t k = 0; k < work_.size(); ++k) {
    if (k > 0 && work_[k].unit == work_[k - 1].unit)
      work_[k].load = work_[k - 1].load;
    else {
      work_[k].load = int64_t(loads_.size());
      loads_.push_back({work_[k].unit});
    }
  }
}

void WeightStreaming::start()
{
  pump_loads();
  for (size_t i = 0; i < sys_.size(); ++i)
    next_work(i);
}

// Two weight buffers: load k may start once load k-1 has arrived and every system has finished the work that
// used load k-2.
void WeightStreaming::pump_loads()
{
  while (next_load_ < loads_.size()) {
    const int64_t k = int64_t(next_load_);
    if (k >= 1 && !loads_[size_t(k - 1)].arrived)
      return;
    if (k >= 2) {
      for (const auto& sys : sys_)
        if (sys.load_done_upto < k - 2)
          return;
    }
    start_load(size_t(k));
    ++next_load_;
  }
}

void WeightStreaming::start_load(size_t k)
{
  Load& ld = loads_[k];
  const WaferUnit& u = p_.units[size_t(ld.unit)];
  ld.start = Activities::now();
  const int cols = pf_.cols();
  size_t flows = 0;
  std::vector<std::pair<sg4::Host*, sg4::Host*>> ends;
  std::vector<double> bytes;
  for (const auto& e : pf_.edges())
    if (e.child != nullptr) {  // a SwarmX edge: the weights cross it once
      ends.push_back({e.parent, e.child});
      bytes.push_back(u.weight_bytes);
    }
  for (const auto& sys : sys_)  // each simulated system: leaf edge, then down each column from its port
    for (int c = 0; c < cols; ++c) {
      ends.push_back({pf_.parent_of(sys.id), pf_.tile(sys.id, pf_.rows() - 1, c)});
      bytes.push_back(u.weight_bytes / cols);
    }
  flows = ends.size();
  ld.pending = int64_t(flows);
  for (size_t i = 0; i < flows; ++i)
    acts_.comm(ends[i].first, ends[i].second, bytes[i], [this, k]() {
      Load& ld = loads_[k];
      if (--ld.pending > 0)
        return;
      ld.arrived = true;
      ld.end = Activities::now();
      static const std::string label = "weights in";
      for (const auto& sys : sys_)
        trace_.add(sys.id, 2, label, ld.start, ld.end);
      pump_loads();
      for (size_t i = 0; i < sys_.size(); ++i)
        if (sys_[i].waiting_load)
          next_work(i);
    });
}

void WeightStreaming::next_work(size_t si)
{
  System& sys = sys_[si];
  if (sys.next >= work_.size()) {
    sys.compute_done_t = sys.free_t;
    check_done();
    return;
  }
  const Work& w = work_[sys.next];
  const Load& ld = loads_[size_t(w.load)];
  if (!ld.arrived) {
    sys.waiting_load = true;
    return;
  }
  if (!offload_ready(si, sys.next)) {
    sys.waiting_offload = true;
    return;
  }
  const double now = Activities::now();
  // Waiting for weights or for a layer input off the wafer: both cross the system's I/O.
  if (sys.waiting_load || sys.waiting_offload) {
    sys.b.exposed_weight_streaming_s += now - sys.free_t;
    sys.waiting_load = sys.waiting_offload = false;
  }
  const WaferUnit& u = p_.units[size_t(w.unit)];
  const double seconds =
      (w.backward ? u.recompute_s + u.bwd_s : u.fwd_s) + systems::wafer_hardware(s_.hardware).wafer.kernel_switch_s;
  const size_t k = sys.next;
  if (!w.backward && w.offload_bytes > 0)
    write_input(si, k);
  // The next work's input comes back while this one computes: the wafer holds two layer inputs, the one
  // computing and the one moving (wafer_program.cpp, wafer_memory).
  if (k + 1 < work_.size() && work_[k + 1].backward && work_[k + 1].offload_bytes > 0)
    read_input(si, k + 1);
  acts_.exec(pf_.tile(sys.id, 0, 0), seconds, [this, si, k, now]() {
    System& sys = sys_[si];
    const Work& w = work_[k];
    const WaferUnit& u = p_.units[size_t(w.unit)];
    const double end = Activities::now();
    sys.b.compute_s += end - now;
    if (w.backward && u.bwd_s + u.recompute_s > 0)
      sys.b.recompute_s += (end - now - systems::wafer_hardware(s_.hardware).wafer.kernel_switch_s) *
                           u.recompute_s / (u.bwd_s + u.recompute_s);
    trace_.add(sys.id, 0, u.label, now, end);
    sys.free_t = end;
    // The buffer of this work's load is free once no later work still uses it.
    if (k + 1 >= work_.size() || work_[k + 1].load != w.load)
      sys.load_done_upto = w.load;
    pump_loads();
    if (w.backward)
      stream_gradients(si, k);
    exchange_activations(si, k);
  });
}

// Two layer inputs on the wafer at most (the one computing, the one moving): a forward may start once no more
// than one earlier input is still on its way out; a backward once its input is back.
bool WeightStreaming::offload_ready(size_t si, size_t k)
{
  System& sys = sys_[si];
  const Work& w = work_[k];
  if (w.offload_bytes <= 0)
    return true;
  if (!w.backward)
    return sys.writes_in_flight <= 1;
  read_input(si, k);
  return sys.reads[k] == ReadState::Arrived;
}

// A layer's input leaves the wafer while the layer's forward runs, through the columns' ports and the system's
// leaf edge (the I/O that carries the weights in and the gradients out).
void WeightStreaming::write_input(size_t si, size_t k)
{
  ++sys_[si].writes_in_flight;
  const double t0 = Activities::now();
  offload_flows(si, work_[k].offload_bytes, true, [this, si, k, t0]() {
    System& sys = sys_[si];
    --sys.writes_in_flight;
    sys.written[k] = 1;
    static const std::string label = "layer input out";
    trace_.add(sys.id, 3, label, t0, Activities::now());
    const size_t b = work_[k].partner;
    if (sys.reads[b] == ReadState::Wanted) {
      sys.reads[b] = ReadState::None;
      read_input(si, b);
    }
    if (sys.waiting_offload)
      next_work(si);
  });
}

// A layer's input comes back for its backward (recomputation first), once it has left.
void WeightStreaming::read_input(size_t si, size_t k)
{
  System& sys = sys_[si];
  if (sys.reads[k] != ReadState::None)
    return;
  if (!sys.written[work_[k].partner]) {
    sys.reads[k] = ReadState::Wanted;
    return;
  }
  sys.reads[k] = ReadState::InFlight;
  const double t0 = Activities::now();
  offload_flows(si, work_[k].offload_bytes, false, [this, si, k, t0]() {
    System& sys = sys_[si];
    sys.reads[k] = ReadState::Arrived;
    static const std::string label = "layer input in";
    trace_.add(sys.id, 2, label, t0, Activities::now());
    if (sys.waiting_offload)
      next_work(si);
  });
}

void WeightStreaming::offload_flows(size_t si, double bytes, bool out, std::function<void()> done)
{
  const System& sys = sys_[si];
  const int cols = pf_.cols();
  auto pending = std::make_shared<int>(cols);
  auto finish = std::make_shared<std::function<void()>>(std::move(done));
  for (int c = 0; c < cols; ++c) {
    sg4::Host* tile = pf_.tile(sys.id, pf_.rows() - 1, c);
    sg4::Host* parent = pf_.parent_of(sys.id);
    acts_.comm(out ? tile : parent, out ? parent : tile, bytes / cols, [pending, finish]() {
      if (--*pending == 0)
        (*finish)();
    });
  }
}

// Activations (forward) or their gradients (backward) are laid out by row of tiles: each row exchanges its part
// along its links before the next unit can start.
void WeightStreaming::exchange_activations(size_t si, size_t k)
{
  System& sys = sys_[si];
  const Work& w = work_[k];
  // Forward hands the unit's output to the next unit; backward hands the gradient of the unit's input (the
  // previous unit's output) to the previous unit, and the embedding's backward hands nothing on.
  const double bytes = !w.backward ? p_.units[size_t(w.unit)].out_bytes
                                   : (w.unit > 0 ? p_.units[size_t(w.unit - 1)].out_bytes : 0.0);
  const int rows = pf_.rows(), cols = pf_.cols();
  if (bytes <= 0 || cols < 2) {
    ++sys.next;
    next_work(si);
    return;
  }
  const double t0 = Activities::now();
  auto pending = std::make_shared<int>(rows);
  const double per_row = bytes / rows * double(cols - 1) / double(cols);
  for (int r = 0; r < rows; ++r)
    acts_.comm(pf_.tile(sys.id, r, 0), pf_.tile(sys.id, r, cols - 1), per_row, [this, si, t0, pending]() {
      if (--*pending > 0)
        return;
      System& sys = sys_[si];
      const double now = Activities::now();
      sys.b.exposed_fabric_s += now - t0;
      static const std::string label = "activations across the mesh";
      trace_.add(sys.id, 1, label, t0, now);
      sys.free_t = now;
      ++sys.next;
      next_work(si);
    });
}

// A backward unit's gradients leave through the columns' ports and are summed up the SwarmX tree; on the last
// pass MemoryX then updates the unit's weights (Adam on its CPUs).
void WeightStreaming::stream_gradients(size_t si, size_t k)
{
  const Work& w = work_[k];
  const WaferUnit& u = p_.units[size_t(w.unit)];
  GradientSet& g = grads_[{w.unit, k}];
  const System& sys = sys_[si];
  const int cols = pf_.cols();
  std::vector<std::pair<sg4::Host*, sg4::Host*>> ends;
  std::vector<double> bytes;
  for (int c = 0; c < cols; ++c) {
    ends.push_back({pf_.tile(sys.id, pf_.rows() - 1, c), pf_.parent_of(sys.id)});
    bytes.push_back(u.weight_bytes / cols);
  }
  if (!g.tree_started) {  // the tree above the leaves sums once, whatever the number of systems
    g.tree_started = true;
    for (const auto& e : pf_.edges())
      if (e.child != nullptr) {
        ends.push_back({e.child, e.parent});
        bytes.push_back(u.weight_bytes);
      }
  }
  g.pending += int64_t(ends.size());
  ++outstanding_;
  const double t0 = Activities::now();
  for (size_t i = 0; i < ends.size(); ++i)
    acts_.comm(ends[i].first, ends[i].second, bytes[i], [this, key = std::make_pair(w.unit, k), t0]() {
      GradientSet& g = grads_[key];
      if (--g.pending > 0)
        return;
      last_gradient_t_ = std::max(last_gradient_t_, Activities::now());
      static const std::string label = "gradients out";
      for (const auto& sys : sys_)
        trace_.add(sys.id, 3, label, t0, Activities::now());
      const Work& w = work_[key.second];
      if (!w.last_pass) {
        --outstanding_;
        check_done();
        return;
      }
      const WaferUnit& u = p_.units[size_t(w.unit)];
      const double t1 = Activities::now();
      acts_.exec(pf_.memoryx(),
                 u.params * p_.optimizer_bytes_per_param /
                     systems::wafer_hardware(s_.hardware).memoryx.update_bandwidth_Bps,
                 [this, t1]() {
                   static const std::string label = "optimizer (MemoryX)";
                   trace_.add(-1, 0, label, t1, Activities::now());
                   last_update_t_ = std::max(last_update_t_, Activities::now());
                   --outstanding_;
                   check_done();
                 });
    });
}

void WeightStreaming::check_done()
{
  if (outstanding_ > 0)
    return;
  for (const auto& sys : sys_)
    if (sys.next < work_.size())
      return;
  done_ = true;
}

replay::ReplayResult WeightStreaming::finish()
{
  replay::ReplayResult r;
  double compute_end = 0;
  for (const auto& sys : sys_)
    compute_end = std::max(compute_end, sys.compute_done_t);
  r.step_time_s = std::max({compute_end, last_gradient_t_, last_update_t_});
  for (auto& sys : sys_) {
    // After its last unit, a system waits for the last gradients to reach MemoryX, then for the last update.
    const double grads = std::max(0.0, std::min(last_gradient_t_, r.step_time_s) - sys.compute_done_t);
    sys.b.exposed_dp_comm_s += grads;
    sys.b.optimizer_s += std::max(0.0, r.step_time_s - std::max(sys.compute_done_t, last_gradient_t_));
    r.average += sys.b;
    r.per_stage.push_back(sys.b);
  }
  r.average /= double(sys_.size());
  r.per_stage.resize(1);
  r.simulated_devices = int64_t(sys_.size());
  r.activities = acts_.count();
  r.links = pf_.link_count();
  r.trace = trace_.take();
  return r;
}


}  // namespace dtsim::wafer
