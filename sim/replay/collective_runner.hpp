#pragma once
// Internal to sim/replay: flows, pipeline transfers and collectives' phases as SimGrid activities on the cluster's
// platform (replay/activities.hpp); in full fidelity, a collective waits for its group's last member (join).
#include <cstdint>
#include <functional>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "parallel/collective.hpp"
#include "parallel/placement.hpp"
#include "platform/cluster_platform.hpp"
#include "replay/activities.hpp"
#include "replay/folding.hpp"
#include "replay/group_collectives.hpp"

namespace dtsim::replay {

class CollectiveRunner {
 public:
  /// `placement`: where the job's ranks sit on the cluster; `folding`: which copies of a pipeline transfer run too.
  CollectiveRunner(Activities& acts, const parallel::Placement& placement, const Folding& folding)
      : acts_(acts), placement_(placement), folding_(folding) {}
  /// The platform the activities run on, before the first one.
  void attach(const platform::ClusterPlatform& platform) { platform_ = &platform; }
  const platform::ClusterPlatform& platform() const { return *platform_; }
  /// The host of the device's GPU, where its kernels run.
  simgrid::s4u::Host* gpu_host(int64_t device) const { return platform_->gpu(placement_.cluster_device(device)); }

  /// A flow from device `src` to `dst`: within a node over NVLink, across nodes from NIC to NIC.
  void flow(int64_t src, int64_t dst, double bytes, std::function<void()> fn);
  /// The segment of a flow from src to dst, as flow() sends it.
  Activities::Segment flow_segment(int64_t src, int64_t dst, double bytes) const;
  /// A pipeline transfer and its shared copies on every other rank of the stage; `fn` once all have arrived (the
  /// slowest copy stands for the rank it holds back, which the next collective waits for).
  void pipeline_flow(int64_t src, int64_t dst, double bytes, std::function<void()> fn);

  /// Runs the phases of a collective one after the other, each a latency delay then its flows; `delay_paid`: the
  /// first phase's delay was already spent (folded into the kernel before it).
  void run_phases(Phases phases, size_t i, std::function<void()> done, bool delay_paid = false);
  double phase_delay(const collectives::Phase& ph) const { return ph.latency_s; }
  /// Whether every phase from `from` on has at most one flow (they can then run as one Activities::sequence).
  static bool one_flow_phases(const std::vector<collectives::Phase>& phases, size_t from);
  /// Appends phases[from..] as segments, each phase its latency delay (the first one's skipped if already paid)
  /// then its one flow; phases with one flow at most (one_flow_phases).
  void append_phase_segments(const std::vector<collectives::Phase>& phases, size_t from, bool first_delay_paid,
                             std::vector<Activities::Segment>& segments) const;

  /// Full fidelity: an instance of a group's collective, named by its group's kind, the group and a sequence number.
  using JoinKey = std::tuple<int, int64_t, int64_t>;
  static constexpr int kTpGroup = 0, kDpGroup = 1, kEmbeddingGroup = 2, kEpGroup = 3, kExpertDpGroup = 4,
                       kCpGroup = 5, kGroupKinds = 6;
  /// The key of a lane's collective on a group (each lane of a device counts its own collectives).
  static JoinKey join_key(int group_kind, int lane, int64_t group, int64_t seq)
  {
    return {group_kind + kGroupKinds * lane, group, seq};
  }
  struct Instance {
    std::vector<size_t> waiters;  ///< the members (the caller's device indices), in the order they arrived
    std::vector<double> arrival_t;
  };
  /// Device `di` arrives at `t0`: true (and the members with their arrival times) for the last of `members`.
  bool join(const JoinKey& key, int64_t members, size_t di, double t0, Instance& out);
  /// Device `di` joins instance `key`; when the last of `members` arrives, `phases` run and then every member's
  /// `done`, in the order they arrived.
  void run_joined(const JoinKey& key, int64_t members, size_t di, Phases phases, std::function<void()> done);
  /// Inside a `done` of run_joined: when its collective started, i.e. when its last member joined.
  double joined_t() const { return joined_t_; }

 private:
  Activities& acts_;
  const parallel::Placement& placement_;
  const Folding& folding_;
  const platform::ClusterPlatform* platform_ = nullptr;
  std::map<std::pair<int64_t, int64_t>, std::vector<collectives::Flow>> pipeline_copies_;  // (src, dst) -> copies
  std::map<JoinKey, Instance> instances_;
  std::map<JoinKey, std::vector<std::function<void()>>> joined_done_;  // see run_joined
  double joined_t_ = 0;  // see joined_t
};

}  // namespace dtsim::replay
