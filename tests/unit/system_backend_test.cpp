// One backend interface for GPU clusters and wafer-scale systems (app/system_backend.hpp): each scenario gets the
// backend of its hardware, and the calls that differ by kind give each kind's answer. No simulation runs here.
#include <gtest/gtest.h>

#include "app/load.hpp"
#include "app/system_backend.hpp"
#include "report/system_sections.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::test::source_path;

TEST(SystemBackend, EachHardwareGetsItsBackend)
{
  auto gpu = dtsim::app::load_for_simulation(source_path("scenarios/tiny.yaml"), {});
  auto wafer = dtsim::app::load_for_simulation(source_path("scenarios/wafer/gpt-neox-20b-cs2.yaml"), {});
  EXPECT_EQ(&dtsim::app::backend_for(gpu), &dtsim::app::gpu_cluster_backend());
  EXPECT_EQ(&dtsim::app::backend_for(wafer), &dtsim::app::wafer_scale_backend());
}

TEST(SystemBackend, WaferPlansAreItsModesThatFit)
{
  // GPT-NeoX 20B on one CS-2: weight streaming fits, layer pipelined needs 16 bytes per parameter in SRAM and
  // does not (docs/wafer.md).
  auto s = dtsim::app::load_for_simulation(source_path("scenarios/wafer/gpt-neox-20b-cs2.yaml"), {});
  auto c = dtsim::app::wafer_scale_backend().plan_choices(s);
  EXPECT_EQ(c.candidates, 2);
  EXPECT_EQ(c.not_fitting, 1);
  ASSERT_EQ(c.plans.size(), 1u);
  EXPECT_EQ(c.names, std::vector<std::string>{"weight-streaming"});
  EXPECT_EQ(c.plans[0].wafer_mode, dtsim::scenario::WaferMode::WeightStreaming);
  EXPECT_FALSE(dtsim::app::wafer_scale_backend().step_interval(s, 1.0).known);
  EXPECT_EQ(dtsim::app::wafer_scale_backend().describe_plan(s), "dp 1 mb 16 full");
}

TEST(SystemBackend, GpuPlansComeFromThePlanSpace)
{
  auto s = dtsim::app::load_for_simulation(source_path("scenarios/tiny.yaml"), {});
  auto c = dtsim::app::gpu_cluster_backend().plan_choices(s);
  EXPECT_GT(c.candidates, 1);
  EXPECT_LE(int64_t(c.plans.size()) + c.invalid + c.not_fitting, c.candidates);
  EXPECT_FALSE(c.plans.empty());
  EXPECT_EQ(c.names.size(), c.plans.size());
}

TEST(SystemBackend, ReportSectionsNameEachKindsTerms)
{
  const auto& gpu = dtsim::report::gpu_sections();
  const auto& wafer = dtsim::report::wafer_sections();
  EXPECT_STREQ(gpu.dp_label(), "exposed DP communication");
  EXPECT_STREQ(wafer.dp_label(), "exposed gradient streaming");
  EXPECT_STREQ(gpu.track_name(1), "tensor-parallel");
  EXPECT_STREQ(wafer.track_name(2), "weights in");
}

}  // namespace
