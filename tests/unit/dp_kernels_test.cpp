// Data-parallel collectives overlapped with compute (gradient buckets beside the backward, parameter all-gathers
// beside the forward): NCCL's kernels hold 16 SMs from their launch to their end, and the kernels beside them run on
// the rest of the GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "run_json.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::test::rel_diff;
using Interval = std::pair<double, double>;

// Slices of the first device's track `tid` in a Chrome trace (microseconds), without the optimizer's.
std::vector<Interval> track(const nlohmann::json& trace, int tid)
{
  std::vector<Interval> out;
  for (const auto& e : trace.at("traceEvents"))
    if (e.value("pid", -1) == 0 && e.value("tid", -1) == tid && e.contains("dur") && e.value("name", "") != "optimizer")
      out.emplace_back(e.at("ts").get<double>(), e.at("ts").get<double>() + e.at("dur").get<double>());
  return out;
}

double overlap(const Interval& a, const std::vector<Interval>& others)
{
  double sum = 0;
  for (const auto& b : others)
    sum += std::max(0.0, std::min(a.second, b.second) - std::max(a.first, b.first));
  return sum;
}

// One stage, dp 16 over two nodes, ZeRO-1, 2 MiB buckets: the backward of layers 2..0 runs beside the buckets'
// reduce-scatters and the first forward beside the parameter all-gathers. Each kernel's work is its time alone, so
// summed over the kernels: time beside the collectives * (1 - 16/108) + time without = the compute time of the same
// step with nothing overlapped (dp_overlap and param_gather_overlap off), which every kernel runs alone.
TEST(DataParallelKernels, ComputeBesideThemRunsOnTheRestOfTheSms)
{
  if (dtsim::test::dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  const std::string plan = " --set parallel.tp=1 --set parallel.pp=1 --set parallel.dp=16 --set parallel.zero=1"
                           " --set 'parallel.dp_bucket=2 MiB'";
  const std::string trace = ::testing::TempDir() + "dp-kernels.json";
  auto on = dtsim::test::run_json("scenarios/tiny.yaml",
                                  plan + " --set parallel.param_gather_overlap=true --trace '" + trace + "'");
  auto off = dtsim::test::run_json(
      "scenarios/tiny.yaml", plan + " --set parallel.dp_overlap=false --set parallel.param_gather_overlap=false");
  std::ifstream in(trace);
  const auto t = nlohmann::json::parse(in);
  const auto kernels = track(t, 0), collectives = track(t, 3);
  double beside = 0, alone = 0;
  for (const auto& k : kernels) {
    const double b = overlap(k, collectives);
    beside += b;
    alone += k.second - k.first - b;
  }
  const double share = 16.0 / 108.0;  // NCCL's 16 SMs of the A100's 108 (hardware/dgx-a100-80gb.yaml)
  const double work_us = beside * (1.0 - share) + alone;
  const double off_us = off.at("breakdown").at("compute_s").get<double>() * 1e6;
  std::printf("[dp kernels] %.6g us beside the collectives, %.6g us alone; work %.9g us, without overlap %.9g us\n",
              beside, alone, work_us, off_us);
  ASSERT_GT(beside, 0.0);  // the case overlaps something
  EXPECT_GT(on.at("breakdown").at("compute_s").get<double>() * 1e6, off_us);
  EXPECT_LT(rel_diff(work_us, off_us), 1e-6);
}

}  // namespace
