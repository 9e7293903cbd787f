// Variability (docs/variability.md): the seeded draws (replay/variability.hpp), and the replay under them: nothing
// changes without variability; the same seed gives the same output; the folded replay against the every-device
// replay under the same device draws (exact where every device of a stage waits for the others at each step of
// its pipeline, pp 1) and in expectation under kernel jitter; the step grows with the groups that wait.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "replay/variability.hpp"
#include "run_json.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::replay::KernelFactor;
using dtsim::replay::Variability;
using dtsim::test::dtsim_binary;
using dtsim::test::rel_diff;

TEST(VariabilityDraws, NormalQuantileMatchesTables)
{
  // Standard normal upper-tail quantiles (Abramowitz and Stegun, Table 26.5, and their symmetric ones).
  EXPECT_NEAR(Variability::normal_upper_quantile(0.5), 0.0, 1e-12);
  EXPECT_NEAR(Variability::normal_upper_quantile(0.025), 1.959963984540054, 1e-9);
  EXPECT_NEAR(Variability::normal_upper_quantile(0.975), -1.959963984540054, 1e-9);
  EXPECT_NEAR(Variability::normal_upper_quantile(1e-10), 6.361340902404056, 1e-8);
}

TEST(VariabilityDraws, LogNormalHasMeanOneAndTheCoefficientOfVariationAsked)
{
  // Over 200,000 quantile draws (a stratified sample of the normal) the mean is 1 and the spread the cv.
  const double cv = 0.05;
  const int n = 200000;
  double sum = 0, squares = 0;
  for (int i = 0; i < n; ++i) {
    const double x = Variability::log_normal(Variability::normal_upper_quantile((i + 0.5) / n), cv);
    sum += x;
    squares += x * x;
  }
  const double mean = sum / n, sd = std::sqrt(squares / n - mean * mean);
  EXPECT_NEAR(mean, 1.0, 1e-4);
  EXPECT_NEAR(sd / mean, cv, 1e-3);
}

dtsim::scenario::VariabilitySpec spec(double device, double kernel, int64_t seed = 7)
{
  dtsim::scenario::VariabilitySpec v;
  v.device_spread = device;
  v.kernel_jitter = kernel;
  v.seed = seed;
  return v;
}

TEST(VariabilityDraws, OffMeansEveryFactorIsOne)
{
  const dtsim::parallel::Placement p(4, 2, 2, 8);
  const Variability v(spec(0, 0), p, 2, false, 0);
  EXPECT_FALSE(v.on());
  const KernelFactor f = v.kernel(0, 3, 5, 1.0);
  EXPECT_EQ(f.time, 1.0);
  EXPECT_EQ(f.own, 1.0);
}

TEST(VariabilityDraws, FoldedDeviceIsTheSlowestOfItsStageUnderTheSameDraws)
{
  const dtsim::parallel::Placement p(4, 2, 3, 8);  // dp 4, tp 2, pp 3: 8 devices per stage
  const Variability full(spec(0.05, 0), p, 2, true, 3), folded(spec(0.05, 0), p, 2, false, 3);
  for (int64_t stage = 0; stage < 3; ++stage) {
    double slowest = 0;
    for (int64_t d = stage * 8; d < stage * 8 + 8; ++d)
      slowest = std::max(slowest, full.device(d).time);
    const int64_t rep = stage * 8;
    EXPECT_EQ(folded.device(rep).time, slowest) << "stage " << stage;
    EXPECT_EQ(folded.device(rep).own, full.device(rep).own);
    EXPECT_GE(slowest, full.device(rep).own);
  }
  // Another sample, other draws; the same sample, the same draws.
  const Variability again(spec(0.05, 0), p, 2, true, 3), other(spec(0.05, 0), p, 2, true, 4);
  EXPECT_EQ(again.device(5).time, full.device(5).time);
  EXPECT_NE(other.device(5).time, full.device(5).time);
}

TEST(VariabilityDraws, FoldedKernelIsTheOrderStatisticOfItsTensorParallelGroup)
{
  // The folded draw of a kernel is the slowest of tp draws: its mean over many kernels matches the mean of the
  // largest of tp independent draws of the full replay, and the representative's own never exceeds it.
  const int64_t tp = 8;
  const dtsim::parallel::Placement p(1, tp, 1, 8);
  const Variability full(spec(0, 0.1), p, tp, true, 0), folded(spec(0, 0.1), p, tp, false, 0);
  const int kernels = 40000;
  double folded_sum = 0, full_sum = 0, own_sum = 0;
  for (int k = 0; k < kernels; ++k) {
    const KernelFactor f = folded.kernel(0, k, 0, 1.0);
    ASSERT_LE(f.own, f.time);
    folded_sum += f.time;
    own_sum += f.own;
    double slowest = 0;
    for (int64_t d = 0; d < tp; ++d)
      slowest = std::max(slowest, full.kernel(d, k, 0, 1.0).time);
    full_sum += slowest;
  }
  std::printf("[variability] mean slowest of %lld kernels at cv 0.1: folded %.5f, full %.5f; own %.5f\n",
              (long long)tp, folded_sum / kernels, full_sum / kernels, own_sum / kernels);
  EXPECT_LT(rel_diff(folded_sum / kernels, full_sum / kernels), 2e-3);
  EXPECT_NEAR(own_sum / kernels, 1.0, 2e-3);  // the representative's own kernel: one draw of mean 1
  EXPECT_GT(full_sum / kernels, 1.1);          // E[max of 8] of cv 0.1: about 1 + 1.42 x 0.1
}

// ---- the replay ----------------------------------------------------------------------------------------------

nlohmann::json run_tiny_with(const std::string& extra)
{
  return dtsim::test::run_json("scenarios/tiny.yaml", " " + extra);
}

const char* kDevice = " --set variability.device_spread=0.05";

TEST(VariabilityReplay, NoVariabilityLeavesTheStepAsItIs)
{
  if (dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  const auto base = run_tiny_with("");
  const auto zero = run_tiny_with("--set variability.device_spread=0 --set variability.kernel_jitter=0");
  const auto sampled = run_tiny_with("--samples 5 --seed 3");
  EXPECT_EQ(base.at("step_time_s").get<double>(), zero.at("step_time_s").get<double>());
  EXPECT_EQ(base.at("breakdown"), zero.at("breakdown"));
  EXPECT_FALSE(base.contains("step_time_spread_s"));
  EXPECT_FALSE(base.contains("variability"));
  EXPECT_EQ(base.at("step_time_s").get<double>(), sampled.at("step_time_s").get<double>());
  const auto& spread = sampled.at("step_time_spread_s");
  for (const char* p : {"p5", "p50", "p95"})
    EXPECT_EQ(spread.at(p).get<double>(), base.at("step_time_s").get<double>()) << p;
}

TEST(VariabilityReplay, SameSeedSameOutputAndTheSpreadIsOrdered)
{
  if (dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  const std::string args = std::string(kDevice) + " --set variability.kernel_jitter=0.05 --samples 6";
  const auto a = run_tiny_with(args + " --seed 11"), b = run_tiny_with(args + " --seed 11"),
             c = run_tiny_with(args + " --seed 12");
  EXPECT_EQ(a.dump(), b.dump());
  EXPECT_NE(a.at("step_time_s").get<double>(), c.at("step_time_s").get<double>());
  const auto& s = a.at("step_time_spread_s");
  EXPECT_LE(s.at("p5").get<double>(), s.at("p50").get<double>());
  EXPECT_LE(s.at("p50").get<double>(), s.at("p95").get<double>());
  EXPECT_LT(s.at("p5").get<double>(), s.at("p95").get<double>());
  EXPECT_GT(a.at("breakdown").at("straggler_s").get<double>(), 0);
  EXPECT_EQ(a.at("variability").at("samples").get<int64_t>(), 6);
  // The parts still add up to the (mean) step.
  double parts = 0;
  for (const auto& [k, v] : a.at("breakdown").items())
    if (k != "recompute_s")
      parts += v.get<double>();
  EXPECT_LT(rel_diff(parts, a.at("step_time_s").get<double>()), 1e-9);
}

TEST(VariabilityReplay, FoldedMatchesFullUnderTheSameDeviceDraws)
{
  if (dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  // pp 1: a stage's devices wait for each other at every TP collective and gradient bucket, so its slowest device
  // sets the pace of all, which is what the folded representative runs at.
  for (const char* plan : {"--set parallel.pp=1 --set parallel.dp=8",
                           "--set parallel.pp=1 --set parallel.dp=4 --set devices=8 --set training.global_batch=32"}) {
    const std::string args = std::string(plan) + kDevice + " --samples 3 --seed 5";
    const auto folded = run_tiny_with(args), full = run_tiny_with(args + " --set simulation.fidelity=full");
    const auto base_folded = run_tiny_with(plan),
               base_full = run_tiny_with(std::string(plan) + " --set simulation.fidelity=full");
    const double a = folded.at("step_time_s").get<double>(), b = full.at("step_time_s").get<double>();
    const double base_error = rel_diff(base_folded.at("step_time_s").get<double>(),
                                       base_full.at("step_time_s").get<double>());
    std::printf("[variability] pp 1 (%s): folded %.9g s, full %.9g s, error %.2e (without variability %.2e)\n", plan,
                a, b, rel_diff(a, b), base_error);
    EXPECT_LT(rel_diff(a, b), base_error + 1e-6) << plan;
    EXPECT_GT(a, base_folded.at("step_time_s").get<double>());  // the slowest device sets the pace
  }
}

TEST(VariabilityReplay, FoldedBoundsFullFromAboveAcrossStages)
{
  if (dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  // pp 4, dp 2: each replica's pipeline runs at its own stages' speeds until the gradient all-reduce; folded, every
  // stage runs at the slowest of its replicas, which may be slow in different replicas: an upper bound.
  const std::string args = std::string(kDevice) + " --samples 4 --seed 9";
  const auto folded = run_tiny_with(args), full = run_tiny_with(args + " --set simulation.fidelity=full");
  const double a = folded.at("step_time_s").get<double>(), b = full.at("step_time_s").get<double>();
  std::printf("[variability] pp 4 dp 2: folded %.9g s, full %.9g s, folded above by %.2e\n", a, b, (a - b) / b);
  EXPECT_GE(a, b * (1 - 0.01));
  EXPECT_LT(a, b * 1.05);
}

TEST(VariabilityReplay, KernelJitterFoldedMatchesFullInExpectation)
{
  if (dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  // tp 8 in one node, one replica, one stage: every run of kernels ends at a TP collective that waits for the
  // slowest of the group's 8 draws; folded draws that slowest directly. Means over 40 sampled steps.
  const std::string args = "--set devices=8 --set parallel.tp=8 --set parallel.pp=1 --set training.global_batch=16 "
                           "--set variability.kernel_jitter=0.1 --samples 40 --seed 2";
  const auto folded = run_tiny_with(args), full = run_tiny_with(args + " --set simulation.fidelity=full");
  const auto base =
      run_tiny_with("--set devices=8 --set parallel.tp=8 --set parallel.pp=1 --set training.global_batch=16");
  const double a = folded.at("step_time_s").get<double>(), b = full.at("step_time_s").get<double>();
  const double nominal = base.at("step_time_s").get<double>();
  std::printf("[variability] tp 8 kernel jitter 0.1: folded %.9g s, full %.9g s (%+.2f%%), nominal %.9g s\n", a, b,
              100 * (a - b) / b, nominal);
  EXPECT_LT(rel_diff(a, b), 0.01);
  EXPECT_GT(a, nominal * 1.02);  // the group waits for its slowest draw at every collective
}

TEST(VariabilityReplay, TheStepGrowsWithTheGroupsThatWait)
{
  if (dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  // Weak scaling in data parallelism (the same work per replica): more replicas, a slower slowest device.
  double previous = 0;
  for (int dp : {1, 4, 16}) {
    const std::string plan = "--set parallel.pp=1 --set parallel.tp=1 --set devices=" + std::to_string(dp) +
                             " --set parallel.dp=" + std::to_string(dp) +
                             " --set training.global_batch=" + std::to_string(8 * dp);
    const auto with = run_tiny_with(plan + kDevice + " --samples 20 --seed 4"), without = run_tiny_with(plan);
    const double ratio = with.at("step_time_s").get<double>() / without.at("step_time_s").get<double>();
    std::printf("[variability] dp %2d: mean step over nominal %.4f\n", dp, ratio);
    EXPECT_GT(ratio, previous) << "dp " << dp;
    previous = ratio;
  }
}

TEST(VariabilityReplay, WaferAndSharedFabricRefuseItWithExitTwo)
{
  if (dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  const std::string bin = "'" + dtsim_binary() + "' run ";
  const std::string tiny = "'" + dtsim::test::source_path("scenarios/tiny.yaml") + "'";
  auto wafer = dtsim::test::run_capture(bin + "'" + dtsim::test::source_path("scenarios/wafer/bert-large-cs2.yaml") +
                                        "' --set variability.device_spread=0.01 2>&1");
  EXPECT_EQ(wafer.rc, 2);
  EXPECT_NE(wafer.out.find("variability: expected no variability section on wafer-scale hardware"), std::string::npos)
      << wafer.out;
  auto shared = dtsim::test::run_capture(bin + tiny + " " + tiny + " --shared-fabric --samples 2 2>&1");
  EXPECT_EQ(shared.rc, 2);
  EXPECT_NE(shared.out.find("variability: expected no variability on a shared fabric"), std::string::npos)
      << shared.out;
}

}  // namespace
