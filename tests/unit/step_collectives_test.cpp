// The small all-reduces of a step outside the overlapped collectives (parallel/step_collectives.hpp): what each
// costs on GPT-3 175B on A100 (scenarios/default.yaml) as data parallelism grows, and which group each runs over.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "parallel/plan.hpp"
#include "parallel/step_collectives.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::parallel::StepCollectives;

StepCollectives at(int64_t dp, std::vector<std::string> more = {})
{
  // Weak scaling: 192 microbatches per pipeline at every size, tp 8, pp 16.
  std::vector<std::string> sets = {"devices=" + std::to_string(dp * 128), "parallel.dp=" + std::to_string(dp),
                                   "training.global_batch=" + std::to_string(dp * 192)};
  sets.insert(sets.end(), more.begin(), more.end());
  const auto s = dtsim::scenario::load_scenario(dtsim::test::source_path("scenarios/default.yaml"), sets);
  return dtsim::parallel::step_collectives(s, dtsim::parallel::derive_plan(s));
}

TEST(StepCollectives, GrowWithTheDataParallelGroup)
{
  std::printf("| GPUs | grad norm (us) | agreement (us) | loss, 192 microbatches (us) | total (ms) |\n");
  double last = 0;
  for (int64_t dp : {8, 32, 128}) {
    const StepCollectives c = at(dp);
    std::printf("| %lld | %.1f | %.1f | %.1f | %.2f |\n", static_cast<long long>(dp * 128), 1e6 * c.grad_norm_s,
                1e6 * c.agreement_s, 1e6 * c.loss_s, 1e3 * c.total_s());
    EXPECT_GT(c.grad_norm_s, 0);
    EXPECT_GT(c.total_s(), last);  // deeper trees and longer rings over more data-parallel ranks
    last = c.total_s();
  }
}

TEST(StepCollectives, GroupsFollowTheOptimizerAndTheStack)
{
  const StepCollectives plain = at(32), zero = at(32, {"parallel.zero=1"});
  // A distributed optimizer's norm spans every rank, not only tp x pp; the agreement stays model-parallel.
  EXPECT_GT(zero.grad_norm_s, plain.grad_norm_s);
  EXPECT_DOUBLE_EQ(zero.agreement_s, plain.agreement_s);
  // The agreement is two all-reduces over the same group as the plain norm.
  EXPECT_NEAR(plain.agreement_s, 2 * plain.grad_norm_s, 1e-12);
  EXPECT_GT(plain.loss_s, 0);
}

}  // namespace
