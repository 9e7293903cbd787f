// Small-output GEMMs as libraries run them (sim/kernels/compute_model.cpp, ComputeModel::gemm_seconds): below the
// curve's best area A* = half_area * (p - 1)^(1/p) k is split over slices of at least 512 (CUTLASS stream-K's 8
// k-tiles of 64) and the fp32 partial sums reduced; at and above A* the fitted curve prices the GEMM exactly as before.
#include <gtest/gtest.h>

#include <cmath>

#include "hardware/hardware_yaml.hpp"
#include "kernels/compute_model.hpp"
#include "shipped_device.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::test::source_path;

using dtsim::test::device_of;

// A 16-bit GEMM (m x k)(k x n) with its operands and result as its memory traffic (model/transformer.cpp, gemm).
dtsim::model::Op gemm(double m, double n, double k)
{
  dtsim::model::Op op;
  op.kind = dtsim::model::Op::Kind::Gemm;
  op.m = m;
  op.n = n;
  op.k = k;
  op.bytes = 2 * (m * k + k * n + m * n);
  return op;
}

// The curve's time with the output padded to A*: the pricing of every GEMM before split-K, written out again.
double padded_seconds(const dtsim::hardware::GemmEfficiency& g, double peak, const dtsim::model::Op& op)
{
  const double area = op.batch * op.m * op.n;
  double padded = area;
  if (g.area_exponent > 1 && g.half_area > 0)
    padded = std::max(area, g.half_area * std::pow(g.area_exponent - 1, 1.0 / g.area_exponent));
  const double a = std::pow(padded, g.area_exponent), half = std::pow(g.half_area, g.area_exponent);
  const double fill = a / (a + half), depth = op.k / (op.k + g.half_k);
  const double eff = g.max * fill * depth;
  return op.flops() * (padded / area) / (peak * eff);
}

// Mixtral 8x7B's router on one microbatch of 512 tokens: 512 x 8 outputs over k = 4096 (4.3 MB of operands), beside
// the layer's qkv GEMM (4096 tokens x 768 x 4096, tp 8). The padded pricing gave the router the time of a GEMM with
// A* outputs: 37.2 us on H100 (18.6 times its operand-bytes bound) and 145.9 us on MI300X, the qkv GEMM's time.
TEST(GemmSplitK, RouterBoundByItsBytesNotByAPaddedOutput)
{
  const auto h100 = device_of("hardware/dgx-h100.yaml");
  dtsim::kernels::ComputeModel cm(h100, "bf16");
  const auto router = gemm(512, 8, 4096);
  const double bytes_bound = cm.memory_seconds(router.bytes);
  // Split 8 ways (k / 512): a GEMM of 32,768 outputs padded to A* at depth 512, then 1 MB of partial sums.
  EXPECT_LT(cm.seconds(router), 5 * bytes_bound);
  EXPECT_LT(cm.seconds(router), 0.3 * padded_seconds(h100.gemm, 989e12, router));

  const auto mi300x = device_of("hardware/mi300x-8.yaml");
  dtsim::kernels::ComputeModel amd(mi300x, "bf16");
  const auto qkv = gemm(4096, 768, 4096);
  // The MI300X curve (half_k 640, half_area 5.9M) still prices a one-wave GEMM of depth 512 at ~35 us: the router
  // stays well above its bytes (2 us) but no longer costs what the layer's qkv GEMM does.
  EXPECT_LT(amd.seconds(router), 0.3 * amd.seconds(qkv));
  EXPECT_GT(amd.seconds(router), amd.memory_seconds(router.bytes));
}

// At and above A* (and wherever no slice of 512 fits or none fills the device better) nothing changes: the same
// expression, the same double.
TEST(GemmSplitK, LargeAndShallowGemmsPricedAsBefore)
{
  for (const char* file : {"hardware/dgx-h100.yaml", "hardware/mi300x-8.yaml", "hardware/dgx-a100-80gb.yaml"}) {
    const auto d = device_of(file);
    dtsim::kernels::ComputeModel cm(d, "bf16");
    const double peak = d.peak_flops.at("bf16");
    for (const auto& op : {gemm(4096, 4096, 4096), gemm(8192, 28672, 8192), gemm(16384, 128, 16384),
                           gemm(4096, 768, 4096), gemm(512, 4096, 8), gemm(4096, 8, 512)}) {
      const double expected = std::max(cm.memory_seconds(op.bytes), padded_seconds(d.gemm, peak, op));
      EXPECT_EQ(cm.seconds(op), expected) << file << " " << op.m << "x" << op.n << "x" << op.k;
    }
  }
}

// A split GEMM costs its slices' GEMM (at s x area outputs, depth k / s, padded to A*) plus the reduction's fp32
// traffic, written and read: checked by hand for the router on H100 at its best split, 8 slices.
TEST(GemmSplitK, SplitTimeIsSlicesGemmPlusReduction)
{
  const auto h100 = device_of("hardware/dgx-h100.yaml");
  dtsim::kernels::ComputeModel cm(h100, "bf16");
  const auto router = gemm(512, 8, 4096);
  auto slices = router;
  slices.batch = 8;
  slices.k = 512;
  const double reduction = cm.memory_seconds(2 * 4 * 8 * 512 * 8);
  const double expected = padded_seconds(h100.gemm, 989e12, slices) + reduction;
  EXPECT_LT(dtsim::test::rel_diff(cm.seconds(router), expected), 1e-12);
  // A smaller output never takes longer than a larger one of the same depth.
  double previous = 0;
  for (double n : {1.0, 8.0, 64.0, 256.0, 1024.0, 4096.0}) {
    const double t = cm.seconds(gemm(512, n, 4096));
    EXPECT_GE(t, previous) << n;
    previous = t;
  }
}

}  // namespace
