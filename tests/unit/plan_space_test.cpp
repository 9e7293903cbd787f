// The plan space of `dtsim search` and `dtsim compare` (issue "Studies", section 6): pruning counts on a small case
// computed by hand.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "parallel/plan_space.hpp"
#include "scenario/scenario_spec.hpp"
#include "scenario/schedule_registry.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::test::source_path;

// tiny-gpt (4 layers, 8 heads, hidden 256, ffn 1024) on 8 GPUs of one DGX A100 node, global batch 16, with the
// narrow dimensions: micro batch 1, 2, 4; selective and full recomputation; chunks 1 and 2; 1F1B (interleaved with
// 2 chunks); sequence parallelism exactly when tp > 1.
//
// (tp, pp) with pp dividing the 4 layers and tp * pp dividing 8: (1,1) (1,2) (1,4) (2,1) (2,2) (2,4) (4,1) (4,2)
// (8,1), nine pairs. Each gives 3 micro batches x 2 recomputations = 6 plans with 1 chunk, and when pp >= 2 (five
// pairs) 6 more with 2 chunks (interleaved), 6 more with zb-v (2 chunks in a V) and 3 x 6 more with the
// zero-bubble schedules zb-h1, zb-h2 and DualPipe (1 chunk; tried only with a pipeline, DualPipe with an even one):
// 9 x 6 + 5 x 12 + 5 x 18 = 204 candidates.
// Every tp divides the heads and widths. Pruned:
// - pp 4 with 2 chunks needs 8 layers: (1,4) and (2,4), 6 plans each for interleaving and for zb-v = 24 "do not
//   divide the layers";
// - microbatches per pipeline = 16 / (micro batch x dp) must be whole: (1,1) has dp 8, so micro batch 4 gives
//   16 / 32: 2 plans; interleaving needs a multiple of pp: (1,2) with 2 chunks has dp 4, micro batch 4 gives 1
//   microbatch: 2 plans; 4 "global batch" in all ((2,2) and (4,2) with 2 chunks have 8, 4, 2 or 16, 8, 4: even);
// - DualPipe needs an even count of at least 2 pp microbatches: (1,2) dp 4 has 4, 2, 1 (micro batch 2 and 4 fail:
//   4 plans), (1,4) dp 2 has 8, 4, 2 (4 plans), (2,2) dp 2 has 8, 4, 2 (2 plans), (2,4) dp 1 has 16, 8, 4 (2 plans),
//   (4,2) dp 1 has 16, 8, 4 (none): 12 more "global batch", 16 in all.
// The zb-h1, zb-h2 and zb-v plans divide like the 1F1B ones (a V takes any microbatch count). A 3.6M-parameter model
// fits everywhere (DualPipe's two copies of the layers included): 204 - 40 = 164 plans left.
TEST(PlanSpace, PruningCountsOfASmallCaseByHand)
{
  const auto base = dtsim::scenario::load_scenario(source_path("tests/unit/data/sweep/tiny-8.yaml"), {});
  const auto space = dtsim::parallel::enumerate_plans(base);
  EXPECT_EQ(space.candidates, 204);
  EXPECT_EQ(space.invalid, 40);
  EXPECT_EQ(space.not_fitting, 0);
  EXPECT_EQ(space.fitting.size(), 164u);
  ASSERT_EQ(space.pruned.size(), 2u);
  EXPECT_EQ(space.pruned.at("pipeline stages x chunks do not divide the layers"), 24);
  EXPECT_EQ(space.pruned.at(
                "global batch does not divide into microbatches (or interleaving needs a multiple of pp, "
                "DualPipe 2 pp)"),
            16);
  // zb-v is searched by default, with two chunks only: (1,2), (2,2) and (4,2), 6 plans each.
  int64_t zb_v = 0;
  for (const auto& s : space.fitting)
    if (s.schedule == "zb-v") {
      ++zb_v;
      EXPECT_EQ(s.parallel.vpp, 2);
      EXPECT_TRUE(s.parallel.pp_overlap);
    }
  EXPECT_EQ(zb_v, 18);
}

// The full space's options only, on one plan per (tp, pp): micro batch 1, 1 chunk, no recomputation, 1F1B,
// sequence parallelism exactly when tp > 1.
void one_plan_per_shape(dtsim::parallel::PlanDimensions& dims)
{
  dims.micro_batches = {1};
  dims.chunks = {1};
  dims.recompute = {dtsim::scenario::Recompute::None};
  dims.gpipe = false;
  dims.sp_both = false;
}

// `dtsim search --full-space` on the same case, cut to micro batch 1, 1 chunk, no recomputation: ZeRO 0 to 3 (2 and 3
// only without pipeline parallelism) and each overlap the plan allows off and on (tp-overlap needs tp > 1, which has
// sequence parallelism here; gather-overlap ZeRO 1 or 2; p2p-overlap pp > 1). Per (tp, pp) and stage, 2 to the
// number of allowed overlaps:
//   (1,1) dp 8: 1 + 2 + 2 + 1 = 6        (2,1) dp 4: 2 + 4 + 4 + 2 = 12     (4,1) dp 2: 12      (8,1) dp 1: 12
//   (1,2) dp 4: 2 + 4 = 6                (2,2) dp 2: 4 + 8 = 12             (4,2) dp 1: 12
//   (1,4) dp 2: 6                        (2,4) dp 1: 12
// 90 candidates with 1F1B. With a pipeline, zb-h1, zb-h2 and DualPipe add each the half of the 1F1B plans with
// p2p-overlap on (they need it): (1,2) 3, (2,2) 6, (4,2) 6, (1,4) 3, (2,4) 6 each, 3 x 24 = 72 more, 162 candidates
// (micro batch 1 gives DualPipe 4, 8, 16, 8, 16 microbatches: at least 2 pp everywhere).
// ZeRO with dp 1 is refused: (8,1) 4 + 4 + 2, (4,2) 8 + 3 x 4, (2,4) 8 + 3 x 4 = 50 invalid, 112 plans left.
TEST(PlanSpace, FullSpaceAddsZeroStagesAndOverlapsByHand)
{
  const auto base = dtsim::scenario::load_scenario(source_path("tests/unit/data/sweep/tiny-8.yaml"), {});
  auto dims = dtsim::parallel::PlanDimensions::full(base);
  one_plan_per_shape(dims);
  const auto space = dtsim::parallel::enumerate_plans(base, dims);
  EXPECT_EQ(space.candidates, 162);
  EXPECT_EQ(space.invalid, 50);
  EXPECT_EQ(space.fitting.size(), 112u);
  std::set<std::string> plans;
  for (const auto& s : space.fitting) {
    const auto& p = s.parallel;
    SCOPED_TRACE(dtsim::parallel::describe_plan(s));
    EXPECT_TRUE(p.zero < 2 || p.pp == 1);
    EXPECT_TRUE(!p.tp_overlap || p.sp);
    EXPECT_TRUE(!p.param_gather_overlap || p.zero == 1 || p.zero == 2);
    EXPECT_TRUE(!p.pp_overlap || p.pp > 1);
    EXPECT_TRUE(!dtsim::scenario::schedule_def(s.schedule).needs_async_p2p || (p.pp_overlap && p.pp > 1));
    plans.insert(dtsim::parallel::describe_plan(s));
  }
  EXPECT_EQ(plans.size(), space.fitting.size());  // every plan described differently
}

// --full-space tries fp8 beside bf16 only where the device has an fp8 peak (H100, not A100), and names it in the plan.
TEST(PlanSpace, FullSpaceTriesFp8WhereTheDeviceHasIt)
{
  const auto a100 = dtsim::scenario::load_scenario(source_path("tests/unit/data/sweep/tiny-8.yaml"), {});
  EXPECT_TRUE(dtsim::parallel::PlanDimensions::full(a100).precisions.empty());
  const auto h100 = dtsim::scenario::load_scenario(source_path("tests/unit/data/sweep/tiny-8.yaml"),
                                                   {"hardware=../../../../hardware/dgx-h100.yaml"});
  auto dims = dtsim::parallel::PlanDimensions::full(h100);
  ASSERT_EQ(dims.precisions, (std::vector<std::string>{"bf16", "fp8"}));
  one_plan_per_shape(dims);
  const auto space = dtsim::parallel::enumerate_plans(h100, dims);
  size_t fp8 = 0;
  for (const auto& s : space.fitting)
    if (s.training.precision == "fp8") {
      ++fp8;
      EXPECT_NE(dtsim::parallel::describe_plan(s).find(" fp8"), std::string::npos);
    }
  EXPECT_EQ(2 * fp8, space.fitting.size());  // every plan in both precisions
}

}  // namespace
