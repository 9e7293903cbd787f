#pragma once
// Internal to sim/replay: folding (docs/design.md, "Symmetry"). Folded, a simulated device (the representative, dp 0
// and tp 0 of its stage) stands for every rank that does the same work: the other TP ranks and data-parallel replicas
// of its stage. Their flows run at the same time as its own and, where they cross a link that the simulated flows
// cross too (a shared NIC, an oversubscribed uplink: FabricLayout::crosses_shared_link), they slow them down, so they
// are simulated alongside. A copy moves the flow by `dp_shift` data-parallel indices and `tp_shift` TP ranks (modulo
// the group sizes); copies on links of their own cannot change anything simulated and are left out. Pure data: the
// answers depend on the plan and the fabric only, so they are tested without SimGrid (tests/unit/folding_test.cpp).
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "parallel/collective.hpp"
#include "hardware/hardware_spec.hpp"
#include "parallel/plan.hpp"
#include "platform/fabric_layout.hpp"

namespace dtsim::replay {

class Folding {
 public:
  /// `placement`: where the job's ranks sit (plan.placement, or its slot on a shared cluster); `full`: every device is
  /// simulated and nothing is folded.
  Folding(const parallel::DerivedPlan& plan, const parallel::Placement& placement, const hardware::HardwareSpec& hw,
          const collectives::Fabric& fabric, bool full);
  const platform::FabricLayout& layout() const { return layout_; }

  /// The copies of `f` that cross a shared link: data-parallel shifts by multiples of `dp_step` (0: none), and
  /// every TP shift when `tp_ranks`. Empty in full fidelity, where every rank is simulated.
  std::vector<collectives::Flow> shared_copies(const collectives::Flow& f, int64_t dp_step, bool tp_ranks) const;
  /// `f` moved by `dp_shift` data-parallel indices and `tp_shift` TP ranks.
  collectives::Flow copy_of(const collectives::Flow& f, int64_t dp_shift, int64_t tp_shift) const;
  /// Whether every copy of `flows` (all shifts, shared links or not) takes a route like its original's: within a
  /// node or across alike, and on each shared link it crosses as many flows of the set as the original meets.
  /// Where they are not alike, ranks the simulated device stands for run at other speeds and folding is approximate.
  bool copies_alike(const std::vector<collectives::Flow>& flows, int64_t dp_step, bool tp_ranks) const;
  /// Appends to every phase the shared copies of its flows.
  void add_shared_copies(std::vector<collectives::Phase>& phases, int64_t dp_step, bool tp_ranks) const;
  /// Folded, on a fabric without shared links: replaces each phase's flows (one group's) by those of its busiest
  /// member (most bytes sent and received; the device itself when all are alike, as on a ring or an all-to-all),
  /// moved onto `device`. Holds where every member moves no more than the busiest, within its node and across, so
  /// that by symmetry its flows end no later, and the groups of the other TP ranks (and of the other slices every
  /// `dp_step` data-parallel indices; 0: none) take routes alike. False (phases untouched) otherwise.
  bool fold_onto(std::vector<collectives::Phase>& phases, int64_t device, int64_t dp_step) const;
  /// Folded, on a fabric without shared links: replaces an all-to-all's flows (one group's, one phase) by those of
  /// one member of each load (bytes sent and received, within its domain and across; `device` for its own), sent and
  /// received. Holds for a group across domains of unequal shares, whose members differ (fold_onto refuses it): an
  /// all-to-all's flows on one kind of link are alike, so none runs below its links' fair share, and the busiest
  /// link of each kind, which every flow on it shares to the end, sets the collective's end; every member's links of
  /// each load stay as loaded as in the whole group (tests/unit/all_to_all_fold_test.cpp runs both). False (phases
  /// untouched) on shared links, in full fidelity, or for more than one phase.
  bool fold_all_to_all(std::vector<collectives::Phase>& phases, int64_t device) const;
  /// plan_collective(kind, bytes, group, ..., fabric) folded onto `device` by fold_onto, into `phases` (false: not
  /// folded, `phases` then holds every flow). Where the algorithm lays one member's flows (a ring or a tree with every
  /// member alone in its domain: collectives::plan_busiest_member), fold_onto's busiest member and its flows are
  /// found without laying the other members': the same phases at a cost that does not grow with the group.
  bool fold_collective(collectives::Kind kind, double bytes, const collectives::GroupLayout& group, int64_t device,
                       int64_t dp_step, std::vector<collectives::Phase>& phases,
                       const collectives::Fabric& fabric) const;
  /// The devices whose hosts the platform needs, ascending, each once (empty: all): in full fidelity, or where copies
  /// may run anywhere (shared links), every device; otherwise the representatives' TP, expert and context groups and
  /// what fold_onto keeps of their data-parallel groups, for every algorithm and protocol NCCL may choose.
  std::vector<int64_t> needed_devices() const;
  /// Empty when folding is exact by symmetry (or nothing is folded); otherwise what breaks it, for the report.
  /// `pipeline_pairs`: the (sender, receiver) stages that exchange activations; `embedding_sync`: the first and last
  /// stage all-reduce their word-embedding gradients.
  std::string asymmetry(const std::set<std::pair<int64_t, int64_t>>& pipeline_pairs, bool embedding_sync) const;
  /// Whether every stage's collectives are stage 0's moved by stage * stage_devices() devices. Every group of stage st
  /// (placement order: stage slowest) is stage 0's moved so; where the move is a whole number of domains and the job
  /// has its cluster to itself, every domain moves alike, and plan_collective and fold_onto, which see devices only
  /// through their domains and their order, give stage 0's flows moved. Frontier plans have hundreds of data-parallel
  /// ranks per stage: their groups are then planned and folded once, not once per stage.
  bool stages_move() const;
  int64_t stage_devices() const { return placement().dp() * placement().tp(); }
  /// Whether the representatives' NVLink links carry their tensor-parallel flows only: each TP group in one node,
  /// and pipeline neighbours, context and expert groups, data-parallel groups and the embedding pair across nodes.
  bool nvlink_exclusive_to_tp(bool embedding_sync) const;

 private:
  const parallel::Placement& placement() const { return layout_.placement(); }
  /// fold_onto's last step: `theirs`, the flows of the busiest member `busiest`, moved onto `device` into `mine`,
  /// where they keep their kinds and the copies the device stands for take routes alike (false otherwise).
  bool move_onto(const std::vector<collectives::Flow>& theirs, int64_t busiest, int64_t device, int64_t dp_step,
                 std::vector<collectives::Flow>& mine) const;
  bool check_copies_alike(const std::vector<collectives::Flow>& flows, int64_t dp_step, bool tp_ranks) const;
  /// Whether moving devices by a multiple of the domain size moves their domains alike: the job has its cluster
  /// to itself (on a shared cluster its domains map onto the cluster's in any increasing order).
  bool moves_keep_domains() const;
  /// What needed_devices needs of stage `st`'s data-parallel groups (sorted, each device once).
  std::vector<int64_t> data_parallel_needs(int64_t st) const;

  const parallel::DerivedPlan& plan_;
  platform::FabricLayout layout_;
  collectives::Fabric fabric_;
  bool full_;
  mutable std::map<std::vector<int64_t>, bool> alike_;  // copies_alike's answers: (dp_step, tp_ranks, flows...)
  /// fold_onto's row of each member, by device above the phase's lowest; -1 between calls. Kept, not built per
  /// phase: a data-parallel group of 1,024 ranks spans 8,192 devices, a table cleared a dozen times per step.
  mutable std::vector<int32_t> rows_;
};

}  // namespace dtsim::replay
