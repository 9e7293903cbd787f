// enumerate_plans writes every candidate into one spec (sim/parallel/plan_space.cpp) instead of copying the scenario
// for each: nothing one candidate sets may stay on the next. Each plan listed is rebuilt here from a fresh copy of
// the scenario with only its loop values set, and checked field by field.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "app/load.hpp"
#include "model/transformer.hpp"
#include "parallel/memory.hpp"
#include "parallel/plan.hpp"
#include "parallel/plan_space.hpp"
#include "scenario/layer_partition.hpp"
#include "scenario/schedule_registry.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::parallel::PlanDimensions;
using dtsim::scenario::ScenarioSpec;

// `got`'s loop values (shape, options, overlaps) on a fresh copy of `base`, checked as a plan, with the fewest
// layers recomputed that fit where partial recomputation applies: what enumerate_plans lists for those values.
ScenarioSpec perf18_rebuilt_plan(const ScenarioSpec& base, const ScenarioSpec& got, const PlanDimensions& dims)
{
  ScenarioSpec s = base;
  auto& p = s.parallel;
  const auto& g = got.parallel;
  p.tp = g.tp;
  p.pp = g.pp;
  p.cp = g.cp;
  p.dp = g.dp;
  p.vpp = g.vpp;
  p.sp = g.sp;
  p.stage_layers = g.stage_layers;
  p.zero = g.zero;
  p.ep = g.ep;
  p.expert_tp = g.expert_tp;
  p.ep_overlap = g.ep_overlap;
  p.tp_overlap = g.tp_overlap;
  p.param_gather_overlap = g.param_gather_overlap;
  p.pp_overlap = g.pp_overlap;
  s.schedule = got.schedule;
  s.training.micro_batch = got.training.micro_batch;
  s.training.recompute = got.training.recompute;
  s.training.precision = got.training.precision;
  EXPECT_TRUE(dtsim::scenario::check_plan(s).empty()) << dtsim::parallel::describe_plan(got);
  const dtsim::model::Transformer t(s.model);
  if (dims.partial_recompute && s.training.recompute == dtsim::scenario::Recompute::Full &&
      base.training.recompute_layers == 0) {
    const int64_t most = dtsim::scenario::largest_chunk_layers(s);
    for (int64_t n = 1; n < most; ++n) {
      ScenarioSpec fewer = s;
      fewer.training.recompute_layers = n;
      if (estimate_memory(fewer, dtsim::parallel::derive_plan(fewer), t).fits()) {
        s.training.recompute_layers = n;
        break;
      }
    }
  }
  return s;
}

// Every plan of `dims` on `base` against its rebuilt copy, and the plans handed over one at a time against those
// kept; returns how many plans there are.
size_t perf18_check_every_plan(const ScenarioSpec& base, const PlanDimensions& dims)
{
  const auto kept = dtsim::parallel::enumerate_plans(base, dims);
  std::vector<std::string> handed;
  const auto counted = dtsim::parallel::enumerate_plans(
      base, dims, [&handed](const ScenarioSpec& s) { handed.push_back(dtsim::parallel::describe_plan(s)); });
  EXPECT_TRUE(counted.fitting.empty());
  EXPECT_EQ(counted.candidates, kept.candidates);
  EXPECT_EQ(counted.invalid, kept.invalid);
  EXPECT_EQ(counted.not_fitting, kept.not_fitting);
  EXPECT_EQ(counted.pruned, kept.pruned);
  EXPECT_EQ(handed.size(), kept.fitting.size());
  std::set<std::string> names;
  for (size_t i = 0; i < kept.fitting.size(); ++i) {
    const ScenarioSpec& got = kept.fitting[i];
    const std::string name = dtsim::parallel::describe_plan(got);
    if (i < handed.size()) {
      EXPECT_EQ(handed[i], name);
    }
    names.insert(name);
    const ScenarioSpec want = perf18_rebuilt_plan(base, got, dims);
    EXPECT_EQ(got.microbatches, want.microbatches) << name;
    EXPECT_EQ(got.training.recompute_layers, want.training.recompute_layers) << name;
    // What the candidate loops write only where they vary it: the scenario's own value elsewhere.
    const bool needs_async_p2p = dtsim::scenario::schedule_def(got.schedule).needs_async_p2p;
    if (!dims.overlaps) {
      EXPECT_EQ(got.parallel.tp_overlap, base.parallel.tp_overlap) << name;
      EXPECT_EQ(got.parallel.param_gather_overlap, base.parallel.param_gather_overlap) << name;
      EXPECT_EQ(got.parallel.pp_overlap, needs_async_p2p || base.parallel.pp_overlap) << name;
    }
    if (!dims.expert_options || got.parallel.ep == 1) {
      EXPECT_EQ(got.parallel.expert_tp, base.parallel.expert_tp) << name;
      EXPECT_EQ(got.parallel.ep_overlap, base.parallel.ep_overlap) << name;
    }
    EXPECT_EQ(got.parallel.dp_overlap, base.parallel.dp_overlap) << name;
    EXPECT_EQ(got.training.global_batch, base.training.global_batch) << name;
  }
  EXPECT_EQ(names.size(), kept.fitting.size());  // no plan listed twice
  return kept.fitting.size();
}

}  // namespace

TEST(PlanSpaceOneSpec, EveryPlanOfTinyMoesFullSpaceIsItsLoopValuesOnAFreshScenario)
{
  const auto base = dtsim::app::load_for_simulation(dtsim::test::source_path("scenarios/tiny-moe.yaml"), {});
  EXPECT_GT(perf18_check_every_plan(base, PlanDimensions::full(base)), 1000u);
}

TEST(PlanSpaceOneSpec, OverlapsTheScenarioSetsStayOnEveryPlanOfTheWideSpace)
{
  // tp_overlap, pp_overlap and a partial recomputation of the scenario's own, which the wide space does not vary.
  const auto base = dtsim::app::load_for_simulation(
      dtsim::test::source_path("scenarios/tiny.yaml"),
      {"parallel.sp=true", "parallel.tp_overlap=true", "parallel.pp_overlap=true", "training.recompute=full",
       "training.recompute_layers=1"});
  ASSERT_TRUE(base.parallel.tp_overlap);
  EXPECT_GT(perf18_check_every_plan(base, PlanDimensions::wide(base)), 100u);
}
