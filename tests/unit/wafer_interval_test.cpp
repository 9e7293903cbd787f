// The step-time interval of a wafer answer (sim/systems/cerebras_wafer/wafer_interval.hpp): none below six held-out
// runs; from six on, step_s * exp(+-1.645 * RMS(log(1 + e))).
#include <gtest/gtest.h>

#include "systems/cerebras_wafer/wafer_interval.hpp"

namespace {

TEST(WaferInterval, NoneBelowSixHeldOutRuns)
{
  dtsim::systems::WaferSpec w;
  w.name = "WSE-2";
  w.heldout_errors = {0.1, -0.1, 0.1, -0.1, 0.1};
  const auto iv = dtsim::wafer::step_interval(w, 2.0);
  EXPECT_FALSE(iv.known);
  EXPECT_NE(iv.basis.find("5 published runs held out"), std::string::npos) << iv.basis;
}

TEST(WaferInterval, FromSixHeldOutRunsByHand)
{
  dtsim::systems::WaferSpec w;
  w.heldout_errors = {0.1, -0.1, 0.1, -0.1, 0.1, -0.1};
  // RMS(log 1.1, log 0.9) = 0.100461; 2 s * exp(-+1.6449 * 0.100461) = 1.69537 s and 2.35937 s.
  const auto iv = dtsim::wafer::step_interval(w, 2.0);
  ASSERT_TRUE(iv.known);
  EXPECT_NEAR(iv.low_s, 1.69537, 1e-4);
  EXPECT_NEAR(iv.high_s, 2.35937, 1e-4);
  EXPECT_NE(iv.basis.find("6 published wafer runs"), std::string::npos) << iv.basis;
}

}  // namespace
