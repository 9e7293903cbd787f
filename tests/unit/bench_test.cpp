// dtsim bench on the tiny case: well-formed JSON with one entry per run, the same activities and step time as
// `dtsim run`, and an unknown case refused. No timing is asserted (speed is measured by the benchmark, not tested).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_paths.hpp"

namespace {

using dtsim::test::dtsim_binary;
using dtsim::test::run_capture;
using dtsim::test::source_path;

TEST(DtsimBench, TinyCaseJsonMatchesRun)
{
  if (dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  auto b = run_capture("'" + dtsim_binary() + "' bench --case tiny --repeat 2 --format json --root '" +
                       source_path("") + "' 2>/dev/null");
  ASSERT_EQ(b.rc, 0) << b.out;
  auto j = nlohmann::json::parse(b.out);
  ASSERT_EQ(j.at("cases").size(), 1u);
  const auto& c = j.at("cases").at(0);
  EXPECT_EQ(c.at("case"), "tiny");
  EXPECT_TRUE(c.at("ok").get<bool>());
  ASSERT_EQ(c.at("runs").size(), 2u);
  for (const auto& r : c.at("runs")) {
    EXPECT_GT(r.at("wall_s").get<double>(), 0.0);
    EXPECT_GT(r.at("peak_rss_bytes").get<int64_t>(), 0);
    EXPECT_GE(r.at("user_cpu_s").get<double>(), 0.0);
  }
  EXPECT_LE(c.at("wall_best_s").get<double>(), c.at("wall_median_s").get<double>());
  EXPECT_EQ(c.at("simulations").get<int64_t>(), 1);

  auto run = run_capture("'" + dtsim_binary() + "' run '" + source_path("scenarios/tiny.yaml") + "' --format json");
  ASSERT_EQ(run.rc, 0);
  auto rj = nlohmann::json::parse(run.out);
  EXPECT_EQ(c.at("activities").get<int64_t>(), rj.at("simulation").at("activities").get<int64_t>());
  EXPECT_EQ(c.at("step_time_s").get<double>(), rj.at("step_time_s").get<double>());
}

TEST(DtsimBench, UnknownCaseIsBadInput)
{
  if (dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  auto r = run_capture("'" + dtsim_binary() + "' bench --case nope 2>&1");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("'nope' is not a benchmark case"), std::string::npos) << r.out;
}

// A plan that does not fit simulates nothing: the case fails (exit 1) and says why, instead of timing nothing.
TEST(DtsimBench, PlanThatDoesNotFitFails)
{
  if (dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  auto r = run_capture("'" + dtsim_binary() + "' bench --repeat 1 --scenario '" +
                       source_path("scenarios/default.yaml") +
                       "' --set devices=8 --set parallel.pp=1 --set parallel.dp=1 2>&1");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("does not fit in memory"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("custom: FAILED"), std::string::npos) << r.out;
}

}  // namespace
