#pragma once
/// The plans of a search's space, held as what parallel::enumerate_plans sets on the scenario it copies (the parallel
/// plan, the schedule, the training options and the microbatches per pipeline), the rest (model, hardware, stack,
/// key origins) once. A full ScenarioSpec is about 11 KB; DeepSeek-V3's full space holds 36,090 plans that fit, some
/// 400 MB in the parent, and every child a search forks (one per simulation) paid for copying and then tearing down
/// the page tables of all of it: about 25 ms of system time per fork (docs/performance.md).
#include <cstddef>
#include <string>
#include <vector>

#include "scenario/scenario_spec.hpp"

namespace dtsim::app {

/// Hands the heap's free pages back to the system (glibc's or tcmalloc's, whichever allocates), so that the children
/// a search forks copy no page tables for memory it has freed.
void release_free_memory();

class SearchPlans {
 public:
  /// No plans yet: add() each one enumerate_plans hands over (its PlanVisitor form).
  explicit SearchPlans(const scenario::ScenarioSpec& base);
  /// Keeps plan `s` of base's space as the next plan. Throws InternalError if it differs from `base` in a field this
  /// class does not keep.
  void add(const scenario::ScenarioSpec& s);

  size_t size() const { return fields_.size(); }
  /// Plan `i` as enumerate_plans listed it, the same spec field by field.
  scenario::ScenarioSpec at(size_t i) const;
  /// Makes `s`, a plan of this space (from at()), plan `i`: sets the fields that tell plans apart, without copying
  /// the rest again (a search bounds thousands of plans in a row).
  void become(size_t i, scenario::ScenarioSpec& s) const { set_plan(s, fields_[i]); }
  /// Plan `i`'s parallel plan, schedule, training options and microbatches on a default spec elsewhere: enough to
  /// name it (parallel::describe_plan) or compare plans, without copying the model and hardware.
  scenario::ScenarioSpec plan_only(size_t i) const;

 private:
  struct Fields {
    scenario::ParallelSpec parallel;
    std::string schedule;
    scenario::TrainingSpec training;
    int64_t microbatches = 1;
  };
  static void set_plan(scenario::ScenarioSpec& s, const Fields& f);
  scenario::ScenarioSpec base_;
  std::vector<Fields> fields_;
};

}  // namespace dtsim::app
