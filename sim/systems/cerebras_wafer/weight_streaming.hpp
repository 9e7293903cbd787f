#pragma once
// Internal to sim/wafer: the weight-streaming state machine (see wafer_replay.hpp).
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "replay/activities.hpp"
#include "replay/replay.hpp"
#include "scenario/scenario_spec.hpp"
#include "systems/cerebras_wafer/wafer_platform.hpp"
#include "systems/cerebras_wafer/wafer_program.hpp"

namespace dtsim::wafer {

class WeightStreaming {
 public:
  WeightStreaming(replay::Activities& acts, const scenario::ScenarioSpec& s, const WaferProgram& p,
                  const WaferPlatform& pf, bool trace);
  void start();
  bool done() const { return done_; }
  replay::ReplayResult finish();

 private:
  struct Work {  // one unit's forward or backward on one pass
    int64_t unit = 0;
    bool backward = false;
    bool last_pass = false;
    int64_t load = 0;  // the weight load it computes with
    double offload_bytes = 0;  // its unit's input held off the wafer: written out (forward), read back (backward)
    size_t partner = 0;        // the same unit and pass's work in the other direction
  };
  struct Load {  // one unit's weights streaming in
    int64_t unit = 0;
    int64_t pending = 0;
    bool arrived = false;
    double start = 0, end = 0;
  };
  enum class ReadState : char { None, Wanted, InFlight, Arrived };  // Wanted: waits for its write-out
  struct System {
    int64_t id = 0;
    size_t next = 0;  // next work
    int64_t load_done_upto = -1;
    bool waiting_load = false;
    bool waiting_offload = false;  // for a layer input to leave the wafer (forward) or come back (backward)
    int64_t writes_in_flight = 0;
    std::vector<char> written;     // per forward work: its input has left the wafer
    std::vector<ReadState> reads;  // per backward work: its input coming back
    double free_t = 0, compute_done_t = 0;
    replay::Breakdown b;
  };
  struct GradientSet {
    int64_t pending = 0;
    bool tree_started = false;
  };
  void pump_loads();
  void start_load(size_t k);
  void next_work(size_t si);
  bool offload_ready(size_t si, size_t k);
  void write_input(size_t si, size_t k);
  void read_input(size_t si, size_t k);
  void offload_flows(size_t si, double bytes, bool out, std::function<void()> done);
  void exchange_activations(size_t si, size_t k);
  void stream_gradients(size_t si, size_t k);
  void check_done();

  replay::Activities& acts_;
  const scenario::ScenarioSpec& s_;
  const WaferProgram& p_;
  const WaferPlatform& pf_;
  std::vector<System> sys_;
  std::vector<Work> work_;
  std::vector<Load> loads_;
  size_t next_load_ = 0;
  std::map<std::pair<int64_t, size_t>, GradientSet> grads_;
  int64_t outstanding_ = 0;  // gradient sets not yet summed (and applied)
  double last_gradient_t_ = 0, last_update_t_ = 0;
  bool done_ = false;
  replay::Trace trace_;
};

}  // namespace dtsim::wafer
