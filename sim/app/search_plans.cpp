#include "app/search_plans.hpp"

#include <malloc.h>

#include "core/diagnostics.hpp"
#include "parallel/plan_space.hpp"

// gperftools' tcmalloc, which the programs link (CMakeLists.txt, DTSIM_TCMALLOC), keeps freed pages until asked: weak,
// so that builds without it (sanitizers, fuzzing) link and skip the call.
extern "C" void MallocExtension_ReleaseFreeMemory() __attribute__((weak));

namespace dtsim::app {

void release_free_memory()
{
  malloc_trim(0);
  if (MallocExtension_ReleaseFreeMemory)
    MallocExtension_ReleaseFreeMemory();
}

void SearchPlans::set_plan(scenario::ScenarioSpec& s, const Fields& f)
{
  s.parallel = f.parallel;
  s.schedule = f.schedule;
  s.training = f.training;
  s.microbatches = f.microbatches;
}

SearchPlans::SearchPlans(const scenario::ScenarioSpec& base) : base_(base) {}

void SearchPlans::add(const scenario::ScenarioSpec& s)
{
  // enumerate_plans copies the base and sets only these (check_plan sets the microbatches); a plan that differs
  // elsewhere would be simulated as another plan.
  if (s.devices != base_.devices || s.file != base_.file || s.model.name != base_.model.name ||
      s.hardware.name != base_.hardware.name || s.stack.name != base_.stack.name ||
      s.where.size() != base_.where.size())
    throw InternalError("search: plan " + parallel::describe_plan(s) + " differs from the scenario it was made from "
                        "outside its parallel plan, schedule and training options");
  fields_.push_back({s.parallel, s.schedule, s.training, s.microbatches});
}

scenario::ScenarioSpec SearchPlans::at(size_t i) const
{
  scenario::ScenarioSpec s = base_;
  set_plan(s, fields_[i]);
  return s;
}

scenario::ScenarioSpec SearchPlans::plan_only(size_t i) const
{
  scenario::ScenarioSpec s;
  set_plan(s, fields_[i]);
  return s;
}

}  // namespace dtsim::app
