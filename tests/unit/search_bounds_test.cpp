// The plans' lower bounds computed in child processes (app::plan_bounds) are the very doubles the parent computes:
// the search's order, pruning and listed bounds must not depend on where the bounds were computed, nor on the
// search holding its plans compactly (app::SearchPlans).
#include <gtest/gtest.h>

#include "app/load.hpp"
#include "app/search_bounds.hpp"
#include "parallel/plan_space.hpp"
#include "systems/system_kinds.hpp"
#include "property_sample.hpp"
#include "test_paths.hpp"

namespace {

void expect_same_bounds_as_the_parent(const std::string& scenario)
{
  const auto base = dtsim::app::load_for_simulation(dtsim::test::source_path(scenario), {});
  // Every plan of the full space, or every DTSIM_PROPERTY_SAMPLE_STRIDE-th (tests/unit/property_sample.hpp).
  const auto every = dtsim::parallel::enumerate_plans(base, dtsim::parallel::PlanDimensions::full(base)).fitting;
  std::vector<dtsim::scenario::ScenarioSpec> plans;
  for (size_t i = 0; i < every.size(); i += dtsim::test::property_sample_stride())
    plans.push_back(every[i]);
  ASSERT_GT(plans.size(), 64u);  // more than one child's chunk
  // Held as the search holds them (app::SearchPlans), the bounds compared with those of the plans as enumerated.
  dtsim::app::SearchPlans compact(base);
  for (const auto& p : plans)
    compact.add(p);
  ASSERT_EQ(compact.size(), plans.size());
  const dtsim::app::PlanBounds got = dtsim::app::plan_bounds(compact, dtsim::app::ReplayKeys(compact), 2);
  ASSERT_EQ(got.bound.size(), plans.size());
  ASSERT_EQ(got.failed.size(), plans.size());
  for (size_t i = 0; i < plans.size(); ++i) {
    SCOPED_TRACE(dtsim::parallel::describe_plan(plans[i]));
    const double here =
        dtsim::systems::system_kind(plans[i]).lower_bound_step_s(plans[i], dtsim::parallel::derive_plan(plans[i]));
    EXPECT_EQ(got.failed[i], 0);
    EXPECT_GT(here, 0.0);
    EXPECT_EQ(got.bound[i], here);  // bit for bit
    EXPECT_EQ(dtsim::parallel::describe_plan(compact.plan_only(i)), dtsim::parallel::describe_plan(plans[i]));
  }
  EXPECT_TRUE(got.failures.empty());
}

}  // namespace

TEST(SearchBounds, ChildProcessesGiveTheParentsBoundsBitForBit)
{
  expect_same_bounds_as_the_parent("scenarios/tiny.yaml");
  expect_same_bounds_as_the_parent("scenarios/tiny-moe.yaml");
}
