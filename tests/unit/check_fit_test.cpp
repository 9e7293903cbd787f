// validate runs every check run makes before it simulates: app::check_fit is the memory check of app::simulate,
// without the simulation.
#include <gtest/gtest.h>

#include "systems/cerebras_wafer/wafer_run.hpp"
#include "app/simulate.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::test::source_path;

TEST(CheckFit, PlanThatFits)
{
  const auto s = dtsim::scenario::load_scenario(source_path("scenarios/tiny.yaml"), {});
  const auto r = dtsim::app::check_fit(s);
  EXPECT_EQ(r.why_not_fitting, "");
  EXPECT_FALSE(r.simulated);
  EXPECT_GT(r.memory.peak_bytes(), 0);
}

TEST(CheckFit, PlanThatDoesNotFit)
{
  // GPT-3 175B on one 8-GPU node without pipeline parallelism.
  const auto s = dtsim::scenario::load_scenario(source_path("scenarios/default.yaml"),
                                                {"devices=8", "parallel.pp=1", "parallel.dp=1"});
  const auto r = dtsim::app::check_fit(s);
  EXPECT_NE(r.why_not_fitting.find("peak "), std::string::npos) << r.why_not_fitting;
  EXPECT_FALSE(r.memory.fits());
}

TEST(CheckFit, WaferPlanThatFits)
{
  const auto s = dtsim::scenario::load_scenario(source_path("scenarios/wafer/gpt2-small-cs2.yaml"), {});
  const auto r = dtsim::app::check_fit(s);
  EXPECT_EQ(r.why_not_fitting, "");
  EXPECT_STREQ(dtsim::systems::wafer_run(r).memory.why_not().c_str(), "");
  EXPECT_EQ(r.sections, &dtsim::systems::cerebras_wafer_sections());
}

}  // namespace
