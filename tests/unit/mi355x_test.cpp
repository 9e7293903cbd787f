// AMD MI355X (issue 32, step 5): hardware/mi355x-8.yaml loads as the figures it cites
// (../shared/reference/blackwell-h200-amd.md 1.1-1.3, 2.1) and as docs/calibration.md, "AMD MI355X", states its
// decided figures. The refusals (mxfp8 without its curve, nvfp4 without its peak) are tests/config_errors
// scenario-{mxfp8,nvfp4}-on-mi355x.yaml.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"

namespace {

dtsim::scenario::ScenarioSpec load_mi355x(const std::string& precision)
{
  return dtsim::scenario::load_scenario(
      dtsim::test::source_path("scenarios/examples/llama3-8b-mi355x8-" + precision + ".yaml"), {});
}

TEST(Mi355x, DeviceAsPublished)
{
  const auto s = load_mi355x("bf16");
  const auto& d = s.hardware.device;
  EXPECT_EQ(d.name, "MI355X-288GB");
  EXPECT_DOUBLE_EQ(s.hardware.peak_flops("bf16"), 2500e12);  // AMD's dense figure (stas00), not the MAMF table's 2300
  EXPECT_DOUBLE_EQ(s.hardware.peak_flops("fp8"), 5000e12);
  EXPECT_DOUBLE_EQ(s.hardware.peak_flops("mxfp8"), 5000e12);
  EXPECT_EQ(d.peak_flops.count("nvfp4"), 0u);  // NVIDIA's format: not on gfx950
  EXPECT_EQ(d.peak_flops.count("tf32"), 0u);   // not published
  EXPECT_DOUBLE_EQ(d.memory_bytes, 288.0 * (1ull << 30));
  EXPECT_DOUBLE_EQ(d.memory_bw_Bps, 8000e9);
  EXPECT_DOUBLE_EQ(d.power_W, 1400);
  EXPECT_EQ(d.sm_count, 256);
  // No MXFP8 GEMM measurement: no curve, so mxfp8 is refused; fp8 and attention are decided figures.
  EXPECT_EQ(d.gemm_block_scaled.count("mxfp8"), 0u);
  ASSERT_TRUE(d.has_gemm_fp8);
  EXPECT_NEAR(d.gemm_fp8.max / d.gemm.max, 0.46 / 0.56, 0.01);  // MI300X's fp8 / bf16 fits
  ASSERT_EQ(d.attention.count("flash_attention_2"), 1u);
  EXPECT_NEAR(d.attention.at("flash_attention_2").forward_d128[0], 308.343e12 * 1565 / 668.4, 1e9);
}

TEST(Mi355x, SwitchlessMeshOfEight)
{
  const auto s = load_mi355x("bf16");
  const auto& su = s.hardware.scale_up;
  EXPECT_TRUE(su.full_mesh);
  EXPECT_FALSE(su.nvls);
  EXPECT_EQ(s.hardware.domain_devices(), 8);
  EXPECT_DOUBLE_EQ(su.nvlink.bw_Bps, 76.5e9);     // 7 x 76.5 = 535.5 GB/s per GPU (stas00)
  EXPECT_DOUBLE_EQ(su.nvlink.goodput_Bps, 57.4e9);  // gfx94's 48 / 64 of it (ROCm/rccl#1210), decided
  EXPECT_DOUBLE_EQ(su.device_Bps(7), 7 * 57.4e9);
}

TEST(Mi355x, RunsUnderItsUncalibratedStack)
{
  for (const std::string p : {"bf16", "fp8"}) {
    const auto s = load_mi355x(p);
    EXPECT_EQ(s.stack.name, "Megatron-LM on ROCm (Primus), MI355X, uncalibrated") << p;
  }
}

}  // namespace
