#pragma once
// Internal to sim/replay: the state machine that walks every simulated device through its schedule, lane by lane and
// step by step, feeds SimGrid one activity at a time and books where each device's time goes. Its collaborators own
// the rest (docs/architecture.md, "The replay's collaborators"). Split by concern: driver.cpp (construction,
// results), driver_pipeline.cpp (units and steps), driver_tp.cpp (runs of kernels and TP collectives),
// driver_overlap.cpp (overlap groups), driver_pairs.cpp, driver_experts.cpp, driver_context.cpp, driver_gradients.cpp
// (what a device does when its data-parallel collectives end, and the end of its step).
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include <simgrid/s4u.hpp>

#include "parallel/collective.hpp"
#include "parallel/plan.hpp"
#include "platform/cluster_platform.hpp"
#include "replay/activities.hpp"
#include "replay/collective_runner.hpp"
#include "replay/comm_costs.hpp"
#include "replay/dp_queue.hpp"
#include "replay/folding.hpp"
#include "replay/group_collectives.hpp"
#include "replay/overlap_group.hpp"
#include "replay/pipeline_transfers.hpp"
#include "replay/replay.hpp"
#include "replay/variability.hpp"

namespace dtsim::replay {

namespace sg4 = simgrid::s4u;
using parallel::UnitId;

/// A job's step on a cluster shared with other jobs (shared_fabric.cpp): the job's placement on the cluster's
/// nodes, and when the step starts (steps follow one another in one simulation).
struct ClusterSlot {
  parallel::Placement placement;
  double start_t = 0;
};

class Driver {
 public:
  /// From `s` the driver takes the hardware, the model and the fidelity only; the parallel layout, the schedule's
  /// entry and the communication choices come from `plan` (derive_plan(s)). Without `slot`, the job has the cluster
  /// to itself and the driver builds its platform; with one, the platform is shared and attached (attach) before
  /// start().
  /// `sample`: which of the scenario's variability samples this step draws (replay/variability.hpp).
  Driver(Activities& acts, const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan, const StepProgram& prog,
         const parallel::PipelineSchedule& sched, bool trace, const ClusterSlot* slot = nullptr, int64_t sample = 0);
  /// The devices of the job's placement whose hosts the replay touches (ascending; empty: every device), as its own
  /// platform would be built from.
  std::vector<int64_t> needed_devices() const { return folding_.needed_devices(); }
  /// The cluster devices (Placement::cluster_device) whose hosts the replay touches.
  std::vector<int64_t> needed_cluster_devices() const;
  void attach(const platform::ClusterPlatform& shared) { comm_.attach(shared); }
  /// Called once, when the last simulated device has finished the step.
  void on_done(std::function<void()> fn) { on_done_ = std::move(fn); }
  void start();
  /// Times relative to the step's start.
  ReplayResult finish();
  bool all_done() const { return done_count_ == devices_.size(); }

 private:
  /// What a device runs: one unit at a time on lane 0, or a pair of units (StageUnit::beside_previous, with
  /// parallel.ep_overlap) on lanes 0 and 1, whose kernels take the GPU one at a time while one lane's expert
  /// all-to-alls run beside the other's compute.
  struct Lane {
    UnitId unit = 0;
    const std::vector<Step>* steps = nullptr;
    size_t step = 0;
    double prepaid_s = 0;  // latency of the coming collective, spent at the end of the kernel before it
    // collectives the lane issued on each communicator (full fidelity: join key; each lane keys its own)
    int64_t tp_seq = 0, ep_seq = 0, cp_seq = 0;
    bool waiting_gather = false;  // ZeRO-3: at a ParamGather step whose all-gather is not done
    /// run_merged's length of each step of the run in flight (0 for a merged group's other steps), kept from
    /// building the run to booking it: each was asked twice per microbatch (a fifth of Megatron 1T's event loop).
    std::vector<double> run_lengths;
  };
  struct Device {
    int64_t id = 0;
    parallel::Coord coord;
    size_t pos = 0;  // next unit in the stage's order
    std::array<Lane, 2> lanes;
    int lanes_running = 0;
    bool paired = false;   // running a pair: the GPU is taken (take_gpu) and idle time booked (book_idle) per lane
    bool gpu_busy = false;  // paired: a lane's kernels hold the GPU
    int gpu_waiter = -1;    // paired: the lane waiting for the GPU
    double free_t = 0;  // when the device finished its previous work (paired: up to when its time is booked)
    // end of the step
    int refresh_pending = 0;          // ZeRO 1-2: all-gathers of updated parameters after the optimizer
    bool backward_done = false;
    double backward_end_t = 0;
    bool optimizer_started = false;
    bool embedding_joined = false, embedding_synced = false;
    double embedding_wait_s = 0;
    double done_t = 0;
    bool done = false;
    Breakdown b;
  };
  // ---- activities ----------------------------------------------------------------------------------------
  void exec_on(sg4::Host* host, double seconds, std::function<void()> fn);
  sg4::Host* gpu_host(int64_t device) const { return comm_.gpu_host(device); }
  // ---- schedule walking ----------------------------------------------------------------------------------
  void next_unit(size_t di);
  /// Whether the units at the device's position run as a pair (the next one beside it, with ep_overlap).
  bool pair_next(const Device& d) const;
  /// Books the wait for an asynchronous input whose send started at `send_start`: bubble until then, exposed
  /// pipeline communication after.
  void account_wait(Device& d, double send_start);
  /// A batched exchange of pipeline transfers (PipelineTransfers) is over: `covered` seconds of it since `entered`
  /// moved data (exposed pipeline communication), the rest waited for a neighbour (bubble).
  void exchanged(size_t di, double entered, double covered);
  void run_step(size_t di, int lane);
  /// A blocking collective of lane `lane` of device `di`, waited for since `since`, is over: the wait goes to the
  /// breakdown term `exposed` and the trace, and the lane takes its next step.
  void finish_blocking(size_t di, int lane, const Step& st, double since, double Breakdown::*exposed);
  // ---- pairs (driver_pairs.cpp) ----------------------------------------------------------------------------
  /// Before a lane's kernels (and TP collectives): true when it may run them now (always, outside a pair);
  /// otherwise the lane waits for the other's kernels and release_gpu resumes it.
  bool take_gpu(size_t di, int lane);
  /// After a lane's kernels: the GPU goes to the lane waiting for it, if any.
  void release_gpu(size_t di);
  /// Paired: a lane's collective has ended; the GPU's idle time since the device's time was last booked (none
  /// while the other lane computes) goes to `category`.
  void book_idle(Device& d, double& category);
  // ---- runs of kernels and TP collectives (driver_tp.cpp) ----------------------------------------------------
  /// Folded with closed-form tensor-parallel collectives (CommCosts::tp_exclusive): nothing but the device itself sets
  /// the pace of its kernels and of those collectives, so a run of them is one activity of their total time and each
  /// step's share is booked when it completes (same times up to rounding, far fewer activities). A run ends where
  /// something else must happen at that instant: gradients that release data-parallel buckets, or a collective that
  /// does not follow a kernel (it runs as flows). In full fidelity, runs of kernels alone (every collective waits for
  /// its group to join).
  void run_merged(size_t di, int lane, double t0);
  /// Folded, where TP collectives run as flows (not CommCosts::tp_exclusive), outside a pair and without tp_overlap: a
  /// run of kernels and the TP collectives between them, each collective's phases as its latency delays and its one
  /// flow, as one Activities::sequence (which times it as a whole while nothing else uses the GPU or the links, and one
  /// step at a time otherwise: the same dates as run_merged and tp_collective, far fewer events). Breaks where
  /// run_merged does, and before a collective with more than one flow in a phase. False (nothing started) when the run
  /// holds no TP collective: run_merged runs it.
  bool run_sequence(size_t di, int lane, double t0);
  /// Whether the gradients of the lane's unit release data-parallel buckets as they are produced.
  bool releases_buckets(const Device& d, int lane) const
  {
    return dp_.releases_buckets(sched_.graph[d.lanes[size_t(lane)].unit]);
  }
  /// Books `x` seconds of kernel `st` from `t` (compute, recompute, its trace slice), as a run's end shares them out.
  /// `own`: the share of it the device's own kernel takes (KernelFactor; the rest is straggler_s).
  void book_kernel(Device& d, const Step& st, double t, double x, double own);
  /// Step `k` of the lane's unit as this sample draws it (variability.hpp): its length over the timed one.
  KernelFactor kernel_factor(const Device& d, int lane, size_t k) const
  {
    return var_.on() ? sampled_kernel_factor(d, lane, k) : KernelFactor{};  // inline: asked at every kernel
  }
  KernelFactor sampled_kernel_factor(const Device& d, int lane, size_t k) const;
  /// Step `k`'s length in this sample.
  double kernel_s(const Device& d, int lane, size_t k) const
  {
    return (*d.lanes[size_t(lane)].steps)[k].seconds * kernel_factor(d, lane, k).time;
  }
  /// The share of step `k` the device's own kernel takes.
  double own_share(const Device& d, int lane, size_t k) const
  {
    const KernelFactor f = kernel_factor(d, lane, k);
    return f.own / f.time;
  }
  void tp_collective(size_t di, int lane, const Step& st, double t0);
  /// Mixture of experts: the token all-to-all over the device's expert-parallel group (driver_experts.cpp).
  void ep_collective(size_t di, int lane, const Step& st, double t0);
  /// Context parallelism: the ring of keys and values over the device's cp group, then `done` (driver_context.cpp).
  void cp_ring(size_t di, int lane, const Step& st, std::function<void()> done);
  /// A blocking context-parallel collective (Step::blocking): the device waits for it, its time exposed.
  void cp_blocking(size_t di, int lane, const Step& st, double t0);
  // ---- overlap groups (driver_overlap.cpp) ------------------------------------------------------------------
  // parallel.tp_overlap: [begin, end) is an all-gather and/or a reduce-scatter around one compute step; with or
  // without it, a collective issued beside the compute step after it (Step::beside_next).
  bool overlap_group(const Lane& l, size_t& end) const { return overlap_group_at(*l.steps, l.step, end); }
  /// Whether data-parallel kernels may hold SMs while the device's next run of steps runs: a collective in flight
  /// or queued, or, in a pair, one the other lane may issue meanwhile. Such a run is not merged into activities
  /// that hold communication time (TP collectives, latencies), which the SMs' share would slow as well.
  bool dp_kernels_beside(size_t di) const;
  /// Folded with closed-form TP collectives (CommCosts::tp_exclusive), outside a pair and with no data-parallel kernels
  /// beside it: an overlap group's timeline is known in advance (a pair's other lane may take the GPU when the
  /// group's compute ends).
  bool closed_form_groups(size_t di) const
  {
    return !full_ && costs_.tp_exclusive() && !devices_[di].paired && !dp_kernels_beside(di) && !var_.on();
  }
  /// Whether the overlap group [begin, end) (overlap_group_at) goes into run_merged's activity at its closed-form
  /// length (closed_form_groups; TP collectives only).
  bool merges_group(size_t di, const std::vector<Step>& steps, size_t begin, size_t end) const;
  bool overlap_group_at(const std::vector<Step>& steps, size_t at, size_t& end) const
  {
    // The common case, decided inline (run_merged asks at every step of every run): without tp_overlap or context
    // parallelism only a TP collective issued beside the next kernel starts a group.
    if (!plan_.comm.tp_overlap && plan_.groups.cp == 1 &&
        (at >= steps.size() || steps[at].kind != Step::Kind::TpCollective || !steps[at].beside_next))
      return false;
    return overlap_group_end(steps, at, plan_.comm.tp_overlap, plan_.groups.cp, end);
  }
  void run_overlap_group(size_t di, int lane, size_t end, double t0);
  /// Books an overlap group that ends now: `busy` seconds of its compute step `compute`, `exposed` seconds of
  /// communication after it (context ring or TP), its trace slices; then the lane goes on after step `end`.
  /// `gpu_released`: a pair's group that gave the GPU back when its compute ended (its collective's tail is then
  /// booked as the GPU's idle time only, book_idle).
  void finish_overlap_group(size_t di, int lane, size_t begin, size_t end, size_t compute, double t0, double busy,
                            double exposed, bool ring, bool gpu_released);
  // A TP collective, or a context-parallel ring (over the cp group), on its own (no accounting), then `done`.
  void overlapped_comm(size_t di, int lane, const Step& st, std::function<void()> done);

  // ---- data parallel (the queue itself: dp_queue.hpp) ------------------------------------------------------
  /// A collective of the device's data-parallel communicator has ended: a ZeRO-3 gather resumes the lane waiting for
  /// it, the last refresh gather ends the device's step.
  void dp_op_done(size_t di, const DpOp& op, double t0);
  // ZeRO-3: waits at a ParamGather step until its all-gather is done; the next one is prefetched.
  bool param_gather_ready(size_t di, int lane);
  // parallel.param_gather_overlap: the previous step's all-gathers of updated parameters, all issued at the start in
  // the order the first microbatch's forward needs them (Megatron-LM dispatches them right after the optimizer).
  void issue_refresh_gathers(size_t di);
  void on_backward_done(size_t di);
  // First and last stage all-reduce their copies of the word-embedding gradients; waiting for the other stage
  // to get there is idle time, the all-reduce itself is gradient communication.
  void sync_embedding(size_t di);
  bool needs_embedding_sync(const Device& d) const;
  void maybe_optimizer(size_t di);
  void finish_device(size_t di);

  Activities& acts_;
  const model::ModelSpec& model_;  ///< node-limited expert routing (the plan holds the parallel layout)
  const parallel::DerivedPlan& plan_;
  const StepProgram& prog_;
  const parallel::PipelineSchedule& sched_;
  parallel::Placement placement_;
  double start_t_ = 0;  ///< when the step starts (0, or later steps of a job on a shared cluster)
  /// The platform built once the devices the replay touches are known (none on a shared cluster: attach).
  std::unique_ptr<platform::ClusterPlatform> own_platform_;
  std::function<void()> on_done_;
  collectives::Fabric fabric_;  ///< the links collectives run on and what the hardware or stack forces
  bool full_ = false;           ///< every device simulated (simulation.fidelity: full), nothing folded
  Folding folding_;
  GroupCollectives groups_;
  CollectiveRunner comm_;
  CommCosts costs_;
  DataParallelQueue dp_;
  replay::Trace trace_;
  PipelineTransfers pipeline_;
  std::string folding_note_;   // see Folding::asymmetry
  std::vector<Device> devices_;
  size_t done_count_ = 0;
  Variability var_;  ///< this sample's speeds and jitter
  /// run_merged's runs as it builds them where nothing in them depends on the moment (closed_form_groups): by
  /// (device, steps, first step, whether the unit releases buckets). Megatron 1T's 64 stages start the same few
  /// runs on each of 3,072 microbatch units; each was built step by step every time (a fifth of its event loop).
  struct MergedRun {
    size_t end = 0;
    double total = 0, prepaid = 0;
    std::vector<double> lengths;
  };
  std::map<std::tuple<size_t, const std::vector<Step>*, size_t, bool>, MergedRun> merged_runs_;
};

}  // namespace dtsim::replay
