#pragma once
// Internal to sim/replay: the data-parallel communicator of each simulated device. NCCL runs a communicator's
// collectives one at a time, in issue order: gradient buckets as the backward releases them (PyTorch DDP,
// Megatron-LM), ZeRO-3's parameter gathers ahead of the forward that needs them, the all-gathers of updated
// parameters after the optimizer. Each collective's kernels hold their SMs from launch to end, waiting for the
// group's other members included.
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <type_traits>
#include <utility>
#include <vector>

#include "parallel/collective.hpp"
#include "parallel/plan.hpp"
#include "parallel/schedule.hpp"
#include "replay/activities.hpp"
#include "replay/collective_runner.hpp"
#include "replay/comm_costs.hpp"
#include "replay/group_collectives.hpp"
#include "replay/step_program.hpp"

namespace dtsim::replay {

/// One collective on a device's data-parallel communicator. Made only by the factories below, which set each field by
/// name: a brace list of the fields once put `expert` into `unit` (bool converts to UnitId) and left `expert`
/// false, so expert gradients, gathers and refreshes ran over the dense data-parallel group. The constructor is
/// private, so DpOp is no aggregate and such a list no longer compiles.
struct DpOp {
  enum class What { Gradients, ParamGather, ParamRefresh };
  /// The group a collective goes over: the dense data-parallel group (dp * cp ranks) or the expert-data-parallel
  /// group (the ranks holding the same experts). An enum, not a bool, so that it cannot take another argument's place.
  enum class Group { Dense, Experts };
  static Group group_of(bool expert) { return expert ? Group::Experts : Group::Dense; }

  /// Gradient buckets (or all of them at once): an all-reduce, or a reduce-scatter under ZeRO.
  static DpOp gradients(collectives::Kind kind, double bytes, Group group);
  /// ZeRO's all-gather of the parameters step `step` of `unit` waits for.
  static DpOp param_gather(double bytes, parallel::UnitId unit, size_t step, Group group);
  /// The all-gather of the parameters the optimizer updated.
  static DpOp param_refresh(double bytes, Group group);

  collectives::Kind kind = collectives::Kind::AllReduce;
  double bytes = 0;
  What what = What::Gradients;
  size_t step = 0;  ///< ParamGather: the step of `unit` that waits for it
  parallel::UnitId unit = 0;
  bool expert = false;  ///< over the expert-data-parallel group (expert parameters), not the dp group

 private:
  explicit DpOp(What w) : what(w) {}
};
static_assert(!std::is_aggregate_v<DpOp>, "DpOp's fields are set by name (its factories), never by position");

class DataParallelQueue {
 public:
  /// `done`: a collective of device `di` issued at `t0` has ended (the communicator is free again). `idle`: pump
  /// started nothing (a collective runs, or none is queued), so the device may go on to its optimizer.
  using Done = std::function<void(size_t di, const DpOp& op, double t0)>;
  using Idle = std::function<void(size_t di)>;
  DataParallelQueue(Activities& acts, const parallel::DerivedPlan& plan, const StepProgram& prog,
                    const parallel::PipelineSchedule& sched, GroupCollectives& groups, CollectiveRunner& comm,
                    const CommCosts& costs, bool full, Done done, Idle idle);
  /// A simulated device, in the order of the caller's device indices.
  void add_device(int64_t device);

  // ---- gradients -------------------------------------------------------------------------------------------
  /// Whether this unit's gradients are reduced now: on the last microbatch, or on every one when the gradients are
  /// sharded (ZeRO 2 and 3 keep only 1/dp of them between microbatches).
  bool reduces_gradients(const parallel::Unit& u) const;
  /// Whether gradients of `u` release buckets as the backward produces them (dp_overlap).
  bool releases_buckets(const parallel::Unit& u) const;
  /// Gradient entry `index` of unit `u` is ready: the bucket it completes, if any, is queued.
  void grad_ready(size_t di, const parallel::Unit& u, int index);
  /// A backward unit finished: without overlap, sharded gradients (ZeRO 2, 3) are reduce-scattered now.
  void backward_unit_done(size_t di, const parallel::Unit& u);
  /// The device's backward is over: without overlap, the replicated gradients go in one collective.
  void backward_done(size_t di);
  /// Whether expert parameters are held by more than one rank (their gradients and gathers have a group to go over).
  bool experts_replicated() const { return plan_.groups.expert_dp > 1; }

  // ---- parameters (ZeRO) ------------------------------------------------------------------------------------
  /// Queues the all-gather of the parameters step `step` of `unit` waits for, once.
  void issue_gather(size_t di, parallel::UnitId unit, size_t step, const Step& st);
  /// Whether that all-gather is done (then forgotten: the step goes on).
  bool take_gathered(size_t di, parallel::UnitId unit, size_t step);
  /// Queues the all-gathers of the parameters the optimizer updated; returns how many.
  int queue_refresh(size_t di, double dense_bytes, double expert_bytes);

  /// Starts the next queued collective if the communicator is free; otherwise calls `idle`.
  void pump(size_t di);
  /// Whether a collective is in flight or queued.
  bool active(size_t di) const { return queues_[di].busy || !queues_[di].ops.empty(); }

 private:
  /// Where each chunk's gradient buckets end: bytes of the bucket that a gradient entry completes, 0 if none.
  void setup_buckets();
  collectives::Kind gradient_collective() const;
  /// Queues the gradients' collectives of `total` bytes (non-expert) and `experts` bytes (expert), and pumps.
  void enqueue_gradients(size_t di, double total, double experts);

  struct Communicator {
    int64_t device = 0;
    parallel::Coord coord;
    std::deque<DpOp> ops;
    bool busy = false;
    int64_t seq = 0;  // collectives issued (full fidelity: join key)
    std::map<std::pair<parallel::UnitId, size_t>, char> gathers;  // per (unit, step): absent or 1 issued, 2 done
  };
  Activities& acts_;
  const parallel::DerivedPlan& plan_;
  const StepProgram& prog_;
  const parallel::PipelineSchedule& sched_;
  GroupCollectives& groups_;
  CollectiveRunner& comm_;
  const CommCosts& costs_;
  bool full_;
  Done done_;
  Idle idle_;
  std::vector<Communicator> queues_;                         // by device index
  std::vector<std::vector<std::vector<double>>> bucket_at_;  // [stage][chunk][gradient index], see setup_buckets
};

}  // namespace dtsim::replay
