// training.precision fp8 (Transformer Engine style) on H100: the linear layers' GEMMs run on 1-byte inputs at the fp8
// peak, the other GEMMs at the bf16 peak; activations keep the linear layers' inputs in fp8; an fp8 copy of the
// weights is held. Checked against hand computations on tiny-gpt (h 256, ffn 1024, 8 heads).
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/compute_model.hpp"
#include "hardware/hardware_yaml.hpp"
#include "parallel/memory.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"

using dtsim::parallel::derive_plan;

namespace {

using dtsim::test::rel_diff;
using dtsim::test::source_path;

dtsim::scenario::ScenarioSpec tiny_h100(const std::string& precision)
{
  return dtsim::scenario::load_scenario(source_path("scenarios/tiny.yaml"),
                                        {"hardware=../hardware/dgx-h100.yaml", "training.precision=" + precision});
}

const dtsim::model::Op* find_op(const dtsim::model::PassProgram& p, const std::string& name)
{
  for (const auto& seg : p.forward)
    for (const auto& op : seg.ops)
      if (op.name == name)
        return &op;
  return nullptr;
}

TEST(Fp8, LinearLayersAtTheFp8PeakAttentionAtBf16)
{
  auto s = tiny_h100("fp8");
  dtsim::model::Transformer t(s.model);
  auto layer = t.layer({4, 512, 2, false, 2, 1, 1.0, 1, false, true});
  const auto* fc1 = find_op(layer, "fc1");
  const auto* scores = find_op(layer, "attn_scores");
  ASSERT_TRUE(fc1 && scores);
  EXPECT_TRUE(fc1->linear);
  EXPECT_FALSE(scores->linear);
  // fc1: (2048 x 256) x (256 x 512) with 1-byte inputs and a 2-byte result.
  EXPECT_DOUBLE_EQ(fc1->bytes, 1.0 * (2048 * 256 + 256 * 512) + 2.0 * 2048 * 512);
  dtsim::kernels::ComputeModel fp8(s.hardware.device, "fp8"), bf16(s.hardware.device, "bf16");
  // A large linear GEMM is compute-bound: time scales with peak x efficiency, each precision on its own curve (bf16:
  // max 0.81, half_area 1482910, p 3, half_k 192; fp8: max 0.72, half_area 2097152, p 1.5, half_k 512).
  dtsim::model::Op big = *fc1;
  big.m = 16384;
  big.n = 16384;
  big.k = 16384;
  big.bytes = 0;
  const double A = 16384.0 * 16384;
  const double e16 = 0.81 * std::pow(A, 3) / (std::pow(A, 3) + std::pow(1482910.0, 3)) * 16384 / (16384 + 192);
  const double e8 = 0.72 * std::pow(A, 1.5) / (std::pow(A, 1.5) + std::pow(2097152.0, 1.5)) * 16384 / (16384 + 512);
  EXPECT_LT(rel_diff(fp8.seconds(big) / bf16.seconds(big), (989.0 * e16) / (1979.0 * e8)), 1e-12);
  dtsim::model::Op attn = *scores;
  attn.bytes = 0;
  EXPECT_DOUBLE_EQ(fp8.seconds(attn), bf16.seconds(attn));
}

// Per layer, in units of s*b*h (tp 2, no sp): bf16 keeps 10 + (qkv 6 + proj input 2 + mlp 16) / 2 + scores; fp8
// keeps the QKV, fc1, projection and fc2 inputs in one byte: 8 + (6 + 1 + 12) / 2 + scores, 2 + 2.5 = 4.5 less.
TEST(Fp8, ActivationsAndWeights)
{
  auto a = tiny_h100("bf16"), b = tiny_h100("fp8");
  const double sbh = 512.0 * 4 * 256;
  EXPECT_DOUBLE_EQ(dtsim::parallel::layer_activation_bytes(a.model, derive_plan(a).shape, false) -
                       dtsim::parallel::layer_activation_bytes(b.model, derive_plan(b).shape, false),
                   4.5 * sbh);
  dtsim::model::Transformer t(a.model);
  auto ma = dtsim::parallel::estimate_memory(a, derive_plan(a), t);
  auto mb = dtsim::parallel::estimate_memory(b, derive_plan(b), t);
  EXPECT_DOUBLE_EQ(mb.stages[1].weights_bytes, 3.0 * mb.stages[1].params);  // bf16 weights + fp8 copy
  EXPECT_DOUBLE_EQ(ma.stages[1].weights_bytes, 2.0 * ma.stages[1].params);
}

}  // namespace
