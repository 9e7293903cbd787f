// training.flash_attention: a fused attention kernel (Dao et al. 2022) on tiny-gpt (h 256, 8 heads, sequence 512,
// micro batch 4, tp 2): no score matrix in memory, no softmax or dropout kernels, one more score GEMM in backward.
#include <gtest/gtest.h>

#include "kernels/compute_model.hpp"
#include "parallel/memory.hpp"
#include "replay/step_program.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"
#include "tiny_scenario.hpp"

using dtsim::parallel::derive_plan;

namespace {

using dtsim::test::rel_diff;
using dtsim::test::source_path;

using dtsim::test::tiny_scenario;

std::vector<std::string> op_names(const std::vector<dtsim::model::Segment>& segs)
{
  std::vector<std::string> names;
  for (const auto& seg : segs)
    for (const auto& op : seg.ops)
      names.push_back(op.name);
  return names;
}

bool has(const std::vector<std::string>& v, const std::string& x)
{
  return std::find(v.begin(), v.end(), x) != v.end();
}

TEST(FlashAttention, KernelsOfOneLayer)
{
  auto s = tiny_scenario({"training.flash_attention=true"});
  dtsim::model::Transformer t(s.model);
  dtsim::model::Shape shape{4, 512, 2, false, 2, 1, 1.0, 1, true};
  auto layer = t.layer(shape);
  auto fwd = op_names(layer.forward), bwd = op_names(layer.backward);
  EXPECT_TRUE(has(fwd, "attn_scores"));
  EXPECT_FALSE(has(fwd, "softmax"));
  EXPECT_FALSE(has(fwd, "attn_dropout"));
  EXPECT_TRUE(has(bwd, "attn_scores.recompute"));
  EXPECT_TRUE(layer.selective_recompute.empty());  // nothing stored that selective recomputation would drop
  // Memory traffic: Q and K for the scores, V and O for the values (4 x 8 / 2 = 16 heads of 512 x 32, 2 bytes);
  // the 512 x 512 scores stay on chip.
  for (const auto& seg : layer.forward)
    for (const auto& op : seg.ops)
      if (op.name == "attn_scores" || op.name == "attn_values") {
        EXPECT_DOUBLE_EQ(op.bytes, 2.0 * 16 * (512 * 32 + 512 * 32)) << op.name;
      }
}

// Korthikanti's 5as/(ht) per sbh for the scores, their softmax and dropout mask: gone with fused attention, which is
// then the same as selective recomputation's memory (the score terms are all that selective drops).
TEST(FlashAttention, NoScoreMatrixInMemory)
{
  auto plain = tiny_scenario({}), flash = tiny_scenario({"training.flash_attention=true"});
  const double with_scores = dtsim::parallel::layer_activation_bytes(plain.model, derive_plan(plain).shape, false);
  const double without = dtsim::parallel::layer_activation_bytes(flash.model, derive_plan(flash).shape, false);
  const double sbh = 512.0 * 4 * 256;
  EXPECT_DOUBLE_EQ(with_scores - without, sbh * 5.0 * 8 * 512 / (256.0 * 2));
  EXPECT_DOUBLE_EQ(without, dtsim::parallel::layer_activation_bytes(plain.model, derive_plan(plain).shape, true));
}

// Hardware FLOPs count the backward's score recomputation: 2 * tokens * s * (heads * head_dim) per layer and
// microbatch, 4 layers, 16 microbatches of 4 x 512 tokens.
TEST(FlashAttention, HardwareFlopsCountTheRecomputedScores)
{
  auto plain = tiny_scenario({}), flash = tiny_scenario({"training.flash_attention=true"});
  dtsim::model::Transformer t(plain.model);
  dtsim::kernels::ComputeModel cm(plain.hardware.device, plain.training.precision);
  auto a = dtsim::replay::build_step_program(plain, derive_plan(plain), t, cm);
  auto b = dtsim::replay::build_step_program(flash, derive_plan(flash), t, cm);
  EXPECT_DOUBLE_EQ(a.model_flops, b.model_flops);
  EXPECT_LT(rel_diff(b.hardware_flops - a.hardware_flops, 4 * 16 * 2.0 * 2048 * 512 * 256), 1e-12);
}

}  // namespace
