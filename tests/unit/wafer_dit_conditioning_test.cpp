// DiT-2B's adaLN-Zero conditioning (model key adaln_conditioning_outputs, models/dit-2b.yaml) against hand
// computations: h = 2048, 6 hidden-wide outputs per layer, 30 layers, 256 tokens per image.
//   parameters per layer: 6 * 2048^2 + 6 * 2048 (bias)           = 25,178,112
//   over 30 layers                                               = 755,343,360 (the 755M of docs/wafer.md)
//   forward FLOPs per layer, 4 images: 2 * 4 * 2048 * 6 * 2048    = 201,326,592 (once per image, not per token)
#include <gtest/gtest.h>

#include <algorithm>

#include "core/diagnostics.hpp"
#include "model/model_yaml.hpp"
#include "model/transformer.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::test::source_path;

dtsim::model::ModelSpec dit(const std::vector<std::string>& sets = {})
{
  dtsim::Diagnostics diag;
  auto spec = dtsim::model::load_model(source_path("models/dit-2b.yaml"), diag, sets);
  EXPECT_TRUE(diag.empty());
  return spec;
}

TEST(WaferDitConditioning, ParametersAndFlopsByHand)
{
  const dtsim::model::Transformer with(dit()), without(dit({"adaln_conditioning_outputs=0"}));
  EXPECT_EQ(with.spec().conditioning_outputs, 6);
  EXPECT_DOUBLE_EQ(with.conditioning_params(), 25178112.0);
  EXPECT_DOUBLE_EQ(without.conditioning_params(), 0.0);
  EXPECT_DOUBLE_EQ(with.layer_params() - without.layer_params(), 25178112.0);
  EXPECT_DOUBLE_EQ(with.total_params(256) - without.total_params(256), 755343360.0);
  // The 2.26B that give DiT-2B its name, within the 15M left out (timestep MLP, label table, final adaLN).
  EXPECT_NEAR(with.total_params(256), 2.26e9, 0.02e9);
  EXPECT_DOUBLE_EQ(with.layer_forward_flops(4 * 256, 256) - without.layer_forward_flops(4 * 256, 256), 201326592.0);
}

TEST(WaferDitConditioning, OneGemmRowPerImage)
{
  const dtsim::model::Transformer t(dit());
  dtsim::model::Shape sh;
  sh.micro_batch = 4;
  sh.seq = 256;
  const auto pass = t.layer(sh);
  const dtsim::model::Op* adaln = nullptr;
  for (const auto& seg : pass.forward)
    for (const auto& op : seg.ops)
      if (op.name == "adaln")
        adaln = &op;
  ASSERT_NE(adaln, nullptr);
  EXPECT_DOUBLE_EQ(adaln->m, 4.0);  // images, not tokens
  EXPECT_DOUBLE_EQ(adaln->k, 2048.0);
  EXPECT_DOUBLE_EQ(adaln->n, 6.0 * 2048);
  // Without the key the layer has no such kernel.
  const dtsim::model::Transformer plain(dit({"adaln_conditioning_outputs=0"}));
  for (const auto& seg : plain.layer(sh).forward)
    for (const auto& op : seg.ops)
      EXPECT_NE(op.name, "adaln");
}

TEST(WaferDitConditioning, OutOfRangeIsAnError)
{
  dtsim::Diagnostics diag;
  dtsim::model::load_model(source_path("models/dit-2b.yaml"), diag, {"adaln_conditioning_outputs=65"});
  ASSERT_FALSE(diag.empty());
  EXPECT_NE(diag.items()[0].str().find("adaln_conditioning_outputs"), std::string::npos);
  EXPECT_NE(diag.items()[0].message.find("got 65"), std::string::npos);
}

}  // namespace
