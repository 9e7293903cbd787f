#pragma once
/// SimGrid plumbing shared by every replay: one engine per run with the network model dtsim uses, and actor-less
/// activities (kernels as Execs, flows as Comms, delays as kernel timers) created one at a time, each calling a
/// continuation when it completes.
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include <simgrid/s4u.hpp>

namespace dtsim::replay {

class Activities {
 public:
  /// Creates the SimGrid engine (one per process) and configures the network model: CM02 without
  /// cross-traffic and without the TCP window bound, i.e. latency + size / bandwidth with max-min sharing
  /// (../shared/notes/simgrid-3.32.md). Build the platform after this, then call run().
  Activities();
  ~Activities();
  Activities(const Activities&) = delete;
  Activities& operator=(const Activities&) = delete;

  /// Runs `seconds` of work on `host` (a GPU, a tile, MemoryX's CPUs); concurrent work on a host shares it.
  void exec(simgrid::s4u::Host* host, double seconds, std::function<void()> done);
  /// Moves `bytes` from `a` to `b` over the platform's route; concurrent flows share links (max-min).
  void comm(simgrid::s4u::Host* a, simgrid::s4u::Host* b, double bytes, std::function<void()> done);
  /// Takes `share` (0..1) of `host`'s speed from one other exec running there, until release(): that exec gets
  /// the rest. Calls nothing when released.
  simgrid::s4u::Exec* occupy(simgrid::s4u::Host* host, double share);
  void release(simgrid::s4u::Exec* occupier);
  /// Waits `seconds` without using any resource: a timer of SimGrid's kernel, not an activity of a model, so the
  /// solver never sees it (a latency term or a closed-form collective per step costs no LMM variable). Counted in
  /// count() with the activities.
  void delay(double seconds, std::function<void()> done);

  /// Starts the event loop after `start` has created the first activities; returns when nothing is left.
  void run(const std::function<void()>& start);
  int64_t count() const { return count_; }
  static double now() { return simgrid::s4u::Engine::get_clock(); }

 private:
  struct Handler {
    std::function<void()> fn;
    simgrid::s4u::ActivityPtr keep;  // an actor-less activity must stay referenced until it completes
  };
  Handler* handler(std::function<void()> fn);
  void dispatch(Handler* h);
  static void on_completion(simgrid::s4u::Activity const& a);

  std::unique_ptr<simgrid::s4u::Engine> engine_;
  std::deque<Handler> handlers_;
  std::vector<Handler*> free_;
  std::vector<simgrid::s4u::ActivityPtr> graveyard_;
  // Occupying execs, kept referenced until SimGrid has ended them after their cancellation.
  struct Occupier {
    simgrid::s4u::ActivityPtr exec;
    int completions = 0;
  };
  std::map<const simgrid::s4u::Activity*, Occupier> occupiers_;
  Handler occupier_mark_;  // the data of every occupying exec
  int64_t count_ = 0;
};

}  // namespace dtsim::replay
