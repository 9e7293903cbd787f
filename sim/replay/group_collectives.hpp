#pragma once
// Internal to sim/replay: the phases of every group's collective as the replay runs them, built once per group and
// size. Folded, the representative's own flows where symmetry allows (Folding::fold_onto); otherwise its group
// together with the groups of the ranks it stands for that share the fabric, and their copies on shared links. Pure
// data, like Folding: no SimGrid.
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "parallel/collective.hpp"
#include "parallel/plan.hpp"
#include "replay/folding.hpp"
#include "replay/step_program.hpp"

namespace dtsim::replay {

/// A collective's phases, shared by every run of it.
using Phases = std::shared_ptr<const std::vector<collectives::Phase>>;

class GroupCollectives {
 public:
  /// `placement`: where the job's ranks sit (plan.placement, or its slot on a shared cluster).
  GroupCollectives(const parallel::DerivedPlan& plan, const parallel::Placement& placement,
                   const collectives::Fabric& fabric, const Folding& folding, bool full);
  /// A tensor-parallel collective of the device's TP group (folded: its busiest member's flows).
  Phases tp(int64_t device, const Step& st);
  /// A collective over the device's data-parallel group, or over its expert-data-parallel group (`expert`); folded,
  /// with the groups of the other TP ranks (every expert-data-parallel group) where it does not fold.
  Phases dp(int64_t device, collectives::Kind kind, double bytes, bool expert);
  /// The context-parallel ring's collective over the device's cp group; folded, with the rings of every TP rank.
  Phases cp(int64_t device, collectives::Kind kind, double bytes);
  /// The token all-to-all over the device's expert-parallel group. `inter_node_scale`: see
  /// collectives::plan_collective.
  Phases ep(int64_t device, double bytes, double inter_node_scale);

 private:
  /// A collective over `size` consecutive data-parallel-index ranks of the device's stage and TP rank (an
  /// expert-parallel group, a context-parallel ring); folded, the groups of every TP rank together.
  Phases rank_group_phases(int64_t device, collectives::Kind kind, double bytes, int64_t size,
                           double inter_node_scale = 1.0);
  /// What both share, cached under `key`: folded, the representative's group (groups[0]) folded onto it by
  /// symmetry every `dp_step` data-parallel indices where that holds; otherwise `groups` together with the copies
  /// of their flows on shared links.
  using GroupPlanKey = std::tuple<int64_t, int64_t, int, double, int64_t>;
  Phases group_phases(int64_t device, const GroupPlanKey& key, const std::vector<std::vector<int64_t>>& groups,
                      int64_t dp_step, collectives::Kind kind, double bytes, double inter_node_scale);
  /// Adds the flows of `more` to those of `into`, phase by phase (concurrent groups of one collective).
  static void merge_phases(std::vector<collectives::Phase>& into, std::vector<collectives::Phase> more);

  const parallel::DerivedPlan& plan_;
  const parallel::Placement& placement_;
  collectives::Fabric fabric_;
  const Folding& folding_;
  bool full_;
  /// The folded data-parallel group of a device: (stage, dp, tp, expert); dp counts for expert groups only.
  using GroupKey = std::tuple<int64_t, int64_t, int64_t, bool>;
  static GroupKey key_of_group(const parallel::Coord& c, bool expert)
  {
    return {c.stage, expert ? c.dp : 0, c.tp, expert};
  }
  std::map<GroupKey, collectives::GroupLayout> layouts_;  ///< folded data-parallel groups, laid out
  std::map<std::tuple<int64_t, int64_t, int, double>, Phases> tp_plans_;  ///< (stage, dp, kind, bytes)
  /// (stage, group or -1, kind, bytes, expert)
  std::map<std::tuple<int64_t, int64_t, int, double, bool>, Phases> dp_plans_;
  /// rank_group_phases: (stage, group and TP rank or -1, kind, bytes, size)
  std::map<GroupPlanKey, Phases> group_plans_;
};

}  // namespace dtsim::replay
