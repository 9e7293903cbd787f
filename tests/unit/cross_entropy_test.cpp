// The language-model loss by its kernels (training.cross_entropy, default the stack's kernels.cross_entropy): the
// bytes each implementation moves per vocabulary-parallel logit, counted by hand from its operations. tiny-gpt:
// vocabulary 1024 (padded to 1024 with tp 2), micro batch 4, sequence 512, tp 2: 4 * 512 * 1024 / 2 logits per rank.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/transformer.hpp"
#include "parallel/plan.hpp"
#include "scenario/scenario_spec.hpp"
#include "run_json.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::test::source_path;

const dtsim::model::Op& loss_op(const std::vector<dtsim::model::Segment>& pass)
{
  for (const auto& seg : pass)
    for (const auto& op : seg.ops)
      if (op.name.rfind("cross_entropy", 0) == 0)
        return op;
  throw std::runtime_error("no cross_entropy kernel");
}

struct LossBytes {
  double forward, backward;
};

LossBytes loss_bytes(std::vector<std::string> sets)
{
  auto s = dtsim::scenario::load_scenario(source_path("scenarios/tiny.yaml"), sets);
  dtsim::model::Transformer t(s.model);
  auto head = t.head(dtsim::parallel::derive_plan(s).shape);
  return {loss_op(head.forward).bytes, loss_op(head.backward).bytes};
}

constexpr double kLogits = 4.0 * 512 * 1024 / 2;

TEST(CrossEntropy, UnfusedPyTorchKernelsOnAnFp32Copy)
{
  // Forward: .float() reads 2 and writes 4, max reads 4, subtract, exp and normalise read and write 4 each, sum reads
  // 4: 6 + 4 + 8 + 8 + 4 + 8 = 38. Backward: the in-place scale (8) and .float()'s backward cast (4 + 2) = 14.
  auto b = loss_bytes({});
  EXPECT_DOUBLE_EQ(b.forward, 38 * kLogits);
  EXPECT_DOUBLE_EQ(b.backward, 14 * kLogits);
  // fp32 training has no copy and no cast back: 32 and 8.
  auto f = loss_bytes({"training.precision=fp32"});
  EXPECT_DOUBLE_EQ(f.forward, 32 * kLogits);
  EXPECT_DOUBLE_EQ(f.backward, 8 * kLogits);
}

TEST(CrossEntropy, MegatronCoreFusedNative)
{
  // Three compiled kernels forward: copy and max (2 + 4), subtract-exp-sum in place (8), normalise in place (8);
  // backward: scale in place and write the bf16 gradient (4 + 4 + 2).
  auto b = loss_bytes({"training.cross_entropy=fused-native"});
  EXPECT_DOUBLE_EQ(b.forward, 22 * kLogits);
  EXPECT_DOUBLE_EQ(b.backward, 10 * kLogits);
}

TEST(CrossEntropy, TransformerEngineTritonKernels)
{
  // Forward: read for the row statistics, read again and overwrite with the gradient (2 + 2 + 2); backward: scale
  // the gradient in place (2 + 2).
  auto b = loss_bytes({"training.cross_entropy=fused-te"});
  EXPECT_DOUBLE_EQ(b.forward, 6 * kLogits);
  EXPECT_DOUBLE_EQ(b.backward, 4 * kLogits);
}

TEST(CrossEntropy, StackSetsTheDefaultTheScenarioOverridesIt)
{
  const std::string stack = "stack=" + source_path("tests/unit/data/stack-kernels.yaml");
  EXPECT_DOUBLE_EQ(loss_bytes({stack}).forward, 6 * kLogits);
  EXPECT_DOUBLE_EQ(loss_bytes({stack, "training.cross_entropy=unfused"}).forward, 38 * kLogits);
}

// The report says which kernels were timed: the JSON plan and the table's "kernels" row.
TEST(CrossEntropy, ReportNamesTheKernelChoices)
{
  if (dtsim::test::dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  const std::string h100 = " --set hardware=../hardware/dgx-h100.yaml --set training.precision=fp8";
  auto j = dtsim::test::run_json("scenarios/tiny.yaml", h100 + " --set training.cross_entropy=fused-te");
  EXPECT_EQ(j.at("plan").at("cross_entropy"), "fused-te");
  EXPECT_EQ(j.at("plan").at("fp8_recipe"), "delayed");
  EXPECT_EQ(j.at("plan").at("flash_attention"), true);  // the H100 default stack runs cuDNN fused attention
  auto table = dtsim::test::run_capture("'" + dtsim::test::dtsim_binary() + "' run '" +
                                        source_path("scenarios/tiny.yaml") + "'" + h100 +
                                        " --set training.fp8_recipe=current");
  ASSERT_EQ(table.rc, 0);
  EXPECT_NE(table.out.find("attention fused (cudnn), loss unfused, fp8 current scaling"), std::string::npos)
      << table.out;
  // A stack's kernel the device has no figures for gives way to FlashAttention-2, and the row says so: the H100
  // stack's cuDNN attention on A100, whose file publishes FlashAttention-2's figures only.
  auto a100 = dtsim::test::run_capture("'" + dtsim::test::dtsim_binary() + "' run '" +
                                       source_path("scenarios/tiny.yaml") + "' --set stack='" +
                                       source_path("hardware/stacks/nemo-2407-h100.yaml") + "'");
  ASSERT_EQ(a100.rc, 0) << a100.out;
  EXPECT_NE(a100.out.find("attention fused (flash-attention-2: "), std::string::npos) << a100.out;
  EXPECT_NE(a100.out.find("dgx-a100-80gb.yaml gives no cudnn figures for A100-SXM4-80GB), loss"), std::string::npos)
      << a100.out;
}

}  // namespace
