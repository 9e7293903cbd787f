#pragma once
// Internal to sim/wafer: the layer-pipelined state machine (see wafer_replay.hpp).
#include <memory>
#include <string>
#include <vector>

#include "replay/activities.hpp"
#include "replay/replay.hpp"
#include "scenario/scenario_spec.hpp"
#include "systems/cerebras_wafer/wafer_platform.hpp"
#include "systems/cerebras_wafer/wafer_program.hpp"

namespace dtsim::wafer {

/// Contiguous units mapped onto a contiguous run of tiles (in snake order along the rows).
struct Region {
  std::vector<int64_t> units;
  int first_tile = 0, tiles = 1;  // snake-order index
  double fwd_s = 0, bwd_s = 0;    // per sample, on this region
  double out_bytes = 0;           // per sample, to the next region
  std::string label;
};

/// Splits the units into at most `tiles` regions of balanced work, with tiles in proportion to their work.
std::vector<Region> map_regions(const WaferProgram& p, int tiles);

class LayerPipeline {
 public:
  LayerPipeline(replay::Activities& acts, const scenario::ScenarioSpec& s, const WaferProgram& p,
                const WaferPlatform& pf, bool trace);
  void start();
  bool done() const { return done_count_ == regions_.size(); }
  replay::ReplayResult finish();

 private:
  struct State {
    size_t fwd_done = 0, bwd_done = 0;   // samples
    size_t fwd_ready = 0, bwd_ready = 0;  // inputs that have arrived
    bool busy = false;
    double free_t = 0, arrival_t = 0, arrival_start_t = 0;
    double done_t = 0;
    replay::Breakdown b;
  };
  void pump(size_t g);
  void hand_off(size_t from, size_t to, bool backward);
  void sync_and_update(size_t g);
  simgrid::s4u::Host* host_of(size_t g, bool last) const;

  replay::Activities& acts_;
  const scenario::ScenarioSpec& s_;
  const WaferProgram& p_;
  const WaferPlatform& pf_;
  std::vector<Region> regions_;
  std::vector<State> st_;
  size_t samples_ = 1;
  size_t done_count_ = 0;
  replay::Trace trace_;
};

}  // namespace dtsim::wafer
