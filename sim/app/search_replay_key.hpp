#pragma once
/// Which plans of a search's space replay the same step: plans whose replay reads the same inputs get the same step
/// time, so a search simulates one of them and gives the others its step (each still listed as its own plan, with its
/// own memory). The key is what the replay and the lower bound read, not how the plan is spelled:
///
/// - every field of the plan but the schedule's name (parallel plan, training options, microbatches);
/// - of the schedule's registry entry, the flags that derive_plan, the step program and the replay read
///   (splits_backward, two_directions, chunk_placement, pairs_by_default; chunked and needs_async_p2p as well);
/// - the pipeline schedule that build_schedule makes of it (every unit, edge, per-stage order, group and pairing),
///   which is all the replay and the bound read of the schedule beyond those flags (systems/gpu_cluster/gpu_step.cpp).
///
/// So zb-h1 and zb-h2 are one replay where their orders coincide (a few microbatches per pipeline), and not where
/// they differ. A schedule list-scheduled on the passes' times (ZB-V) depends on the step program: its plans are
/// keyed by the schedule's name and share a step with no other schedule's.
///
/// Under fused attention `selective` recomputes nothing and its step program is `none`'s (replay/step_program.cpp
/// adds no empty kernel for it), so the key spells both as `none`; each plan's memory is still its own.
#include <cstddef>
#include <string>
#include <vector>

#include "app/search_plans.hpp"

namespace dtsim::app {

/// The plan's part of its replay key: every field of its parallel plan and training options but the schedule's name
/// (`selective` spelt `none` under fused attention). A test checks that every declared parallel.* and training.*
/// key moves it (tests/unit/search_replay_key_keys_test.cpp).
std::string plan_replay_key(const scenario::ScenarioSpec& s);

class ReplayKeys {
 public:
  explicit ReplayKeys(const SearchPlans& plans);

  /// Plans with the same replay class replay the same step (the same inputs to run_replay, step_collectives and the
  /// stack's step overhead). Classes are numbered from 0 in the order of their first plan.
  size_t replay_class(size_t i) const { return replay_class_[i]; }
  /// Plans with the same bound class have the same lower bound: the replay class with parallel.pp_overlap left
  /// out (the bound never reads how pipeline transfers are posted; search_bounds.cpp).
  size_t bound_class(size_t i) const { return bound_class_[i]; }
  size_t replay_classes() const { return replay_classes_; }
  size_t bound_classes() const { return bound_classes_; }

 private:
  void classify(const SearchPlans& plans);
  std::vector<size_t> replay_class_, bound_class_;
  size_t replay_classes_ = 0, bound_classes_ = 0;
};

}  // namespace dtsim::app
