// The derived plan carries what the replay reads (parallel/plan.hpp): the schedule's registry entry, the placement,
// the members of every group and the communication choices, worked out by hand on tiny.yaml (tp 2, pp 4, dp 2 on two
// nodes of 8) and tiny-moe.yaml (tp 2, ep 4, dp 8, one stage). Devices are numbered stage, then data-parallel index,
// then TP rank.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "parallel/plan.hpp"
#include "scenario/scenario_spec.hpp"
#include "scenario/schedule_registry.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::parallel::derive_plan;
using Group = std::vector<int64_t>;

dtsim::scenario::ScenarioSpec load(const std::string& scenario, std::vector<std::string> overrides = {})
{
  return dtsim::scenario::load_scenario(dtsim::test::source_path(scenario), std::move(overrides));
}

TEST(PlanGroups, ScheduleEntryPlacementAndDenseGroups)
{
  const auto s = load("scenarios/tiny.yaml");
  const auto plan = derive_plan(s);
  EXPECT_EQ(plan.schedule, &dtsim::scenario::schedule_def(s.schedule));
  EXPECT_EQ(plan.placement.devices(), 16);
  EXPECT_EQ(plan.placement.devices_per_domain(), 8);
  EXPECT_EQ(plan.tp_group(1, 1), (Group{6, 7}));      // stage 1 holds devices 4-7
  EXPECT_EQ(plan.dp_group(2, 1), (Group{9, 11}));     // stage 2, TP rank 1, both data-parallel indices
  EXPECT_EQ(plan.cp_group(3, 1, 0), (Group{14}));     // no context parallelism: the rank alone
}

TEST(PlanGroups, ExpertGroupsWithinATpRankOrAcrossThem)
{
  // Experts split over tp: ep consecutive data-parallel indices of one TP rank; the ranks holding the same experts
  // every ep-th of them.
  const auto split = derive_plan(load("scenarios/tiny-moe.yaml"));
  EXPECT_EQ(split.ep_group(0, 5, 1), (Group{9, 11, 13, 15}));
  EXPECT_EQ(split.expert_dp_group(0, 5, 1), (Group{3, 11}));
  EXPECT_EQ(split.ep_dp_step(), 4);
  EXPECT_EQ(split.expert_dp_groups(0).size(), 8u);  // one per TP rank and expert-parallel rank
  // Experts whole (expert_tp 1): the groups are carved from the stage's ranks TP ranks first.
  const auto whole = derive_plan(load("scenarios/tiny-moe.yaml", {"parallel.expert_tp=1"}));
  EXPECT_TRUE(whole.groups.experts_across_tp());
  EXPECT_EQ(whole.ep_group(0, 5, 1), (Group{8, 9, 10, 11}));
  EXPECT_EQ(whole.expert_dp_group(0, 5, 1), (Group{3, 7, 11, 15}));
  EXPECT_EQ(whole.ep_dp_step(), 2);
  EXPECT_EQ(whole.expert_dp_groups(0).size(), 4u);
  EXPECT_EQ(whole.expert_dp_index({0, 5, 1}), 3);
}

TEST(PlanGroups, CommunicationChoicesFollowTheScenario)
{
  const auto plain = derive_plan(load("scenarios/tiny.yaml"));
  EXPECT_TRUE(plain.comm.dp_overlap);
  EXPECT_FALSE(plain.comm.pp_overlap);
  EXPECT_FALSE(plain.comm.pairs);  // 1F1B pairs nothing
  EXPECT_EQ(plain.comm.zero, 0);
  const auto set = derive_plan(load("scenarios/tiny.yaml", {"parallel.pp_overlap=true", "parallel.dp_overlap=false",
                                                            "parallel.zero=1", "parallel.dp_bucket=1MiB"}));
  EXPECT_TRUE(set.comm.pp_overlap);
  EXPECT_FALSE(set.comm.dp_overlap);
  EXPECT_EQ(set.comm.zero, 1);
  EXPECT_DOUBLE_EQ(set.comm.dp_bucket_bytes, 1048576.0);
}

}  // namespace
