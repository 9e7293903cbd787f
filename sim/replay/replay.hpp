#pragma once
/// Replays one training step on SimGrid: every simulated device walks its pipeline schedule unit by unit and
/// each unit step by step; activities (kernels, flows, latency timers) are created only when their
/// dependencies have completed, so that only the in-flight window exists at any time.
#include <cstdint>
#include <string>
#include <vector>

#include "parallel/placement.hpp"
#include "parallel/plan.hpp"
#include "parallel/schedule.hpp"
#include "replay/step_program.hpp"
#include "scenario/scenario_spec.hpp"

namespace dtsim::replay {

/// Where one device's step time went; the parts add up to the step time.
struct Breakdown {
  double compute_s = 0;       ///< forward, backward and recomputation kernels
  double recompute_s = 0;     ///< of which recomputation
  double exposed_tp_comm_s = 0;
  double exposed_pp_comm_s = 0;
  double exposed_dp_comm_s = 0;
  double exposed_ep_comm_s = 0;  ///< mixture of experts: token all-to-alls over the expert-parallel group
  double exposed_cp_comm_s = 0;  ///< context parallelism: the key/value ring not hidden behind attention
  double bubble_s = 0;        ///< idle: waiting for another stage's work, or finished before the slowest device
  double optimizer_s = 0;
  double exposed_weight_streaming_s = 0;  ///< wafer: waiting for a layer's weights to arrive
  double exposed_fabric_s = 0;            ///< wafer: activations moving across the mesh between layers
  double stack_overhead_s = 0;            ///< the software stack's fixed time per step (factors.step_overhead)
  /// the small all-reduces of a step outside the overlapped ones: gradient norm, update agreement, the loss of
  /// each microbatch (parallel/step_collectives.hpp)
  double step_collectives_s = 0;
  /// Variability (docs/variability.md): a folded device's kernels beyond its own draw, the time its tensor-parallel
  /// group or its stage's slowest device holds it back. In full fidelity: the wait at a TP collective for the group's
  /// last member; the waits elsewhere show where they happen (data-parallel communication, bubble).
  double straggler_s = 0;
  double total() const
  {
    return compute_s + exposed_tp_comm_s + exposed_pp_comm_s + exposed_dp_comm_s + exposed_ep_comm_s +
           exposed_cp_comm_s + bubble_s + optimizer_s + exposed_weight_streaming_s + exposed_fabric_s +
           stack_overhead_s + step_collectives_s + straggler_s;
  }
  Breakdown& operator+=(const Breakdown& o);
  Breakdown& operator/=(double n);
};

/// Every term of a Breakdown, once: what adds, divides and travels between processes term by term reads this list,
/// so that a new term is one field and one entry here.
inline constexpr double Breakdown::*kBreakdownTerms[] = {
    &Breakdown::compute_s,         &Breakdown::recompute_s,       &Breakdown::exposed_tp_comm_s,
    &Breakdown::exposed_pp_comm_s, &Breakdown::exposed_dp_comm_s, &Breakdown::exposed_ep_comm_s,
    &Breakdown::exposed_cp_comm_s, &Breakdown::bubble_s,          &Breakdown::optimizer_s,
    &Breakdown::exposed_weight_streaming_s, &Breakdown::exposed_fabric_s, &Breakdown::stack_overhead_s,
    &Breakdown::step_collectives_s, &Breakdown::straggler_s};

struct TraceEvent {
  int64_t device = 0;  ///< a GPU, a wafer system or region; -1 for MemoryX
  int track = 0;       ///< 0 compute, 1 tensor-parallel (wafer: on-wafer fabric), 2 pipeline (wafer: weights in),
                       ///< 3 data-parallel (wafer: gradients out)
  std::string name;
  double start = 0, end = 0;
};

/// Timeline events of a run, kept only when asked for.
class Trace {
 public:
  explicit Trace(bool on) : on_(on) {}
  void add(int64_t device, int track, const std::string& name, double t0, double t1)
  {
    if (on_)
      events_.push_back({device, track, name, t0, t1});
  }
  /// Whether events are kept: callers that build a name for add() ask first.
  bool on() const { return on_; }
  std::vector<TraceEvent> take() { return std::move(events_); }

 private:
  bool on_;
  std::vector<TraceEvent> events_;
};

struct ReplayResult {
  double step_time_s = 0;  ///< with variability.samples > 1: the mean of the samples' steps
  /// Each sample's step (variability.samples of them; empty for one sample).
  std::vector<double> sample_steps;
  Breakdown average;                   ///< mean over simulated devices
  std::vector<Breakdown> per_stage;    ///< first simulated device of each stage
  int64_t simulated_devices = 0;
  /// Folded replays whose ranks do not all see the same routes: why the folded result is approximate. Empty when
  /// folding is exact by symmetry, or in full fidelity.
  std::string folding_note;
  int64_t activities = 0;              ///< SimGrid activities created
  int64_t links = 0;
  std::vector<TraceEvent> trace;       ///< filled when asked for
};

/// The software stack's fixed time per step (factors.step_overhead), after the replayed step, on every device.
void add_step_overhead(ReplayResult& r, double seconds);

/// The step's small synchronising all-reduces (parallel::step_collectives), after the replayed step, on every
/// device: every device waits for them, whatever its stage.
void add_step_collectives(ReplayResult& r, double seconds);

/// Runs the step of `plan` (derive_plan(s); `s` gives the hardware, the model, the fidelity and the variability).
/// With variability.samples > 1 and variability on, the samples run one after the other in one simulation on one
/// platform, each drawing its own speeds and jitter; the result holds their mean (breakdown included) and each
/// step. Creates its own SimGrid engine: call once per process.
ReplayResult run_replay(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan, const StepProgram& program,
                        const parallel::PipelineSchedule& schedule, bool record_trace);

}  // namespace dtsim::replay
