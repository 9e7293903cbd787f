// Memory as torchtitan holds it (issue 35, item 7): per-op selective checkpointing (training.saved_activations
// torchtitan-op) and the loss's buffers per logit (stack memory.loss_bytes_per_logit, loss_parallel_bytes_per_logit).
// Expected values are the code facts' byte counts, computed here.
#include <gtest/gtest.h>

#include <stdexcept>

#include "app/simulate.hpp"
#include "model/transformer.hpp"
#include "parallel/memory.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::test::source_path;

const char* kSacRow = "scenarios/validation/torchtitan-2412-llama31-8b-8-bf16.yaml";

TEST(OpCheckpoint, KeepsTheSavedOutputsOfEveryLayer)
{
  const auto s = dtsim::scenario::load_scenario(source_path(kSacRow), {});
  ASSERT_TRUE(s.training.op_checkpoint);
  const auto plan = dtsim::parallel::derive_plan(s);
  // Llama 3.1 8B, tp 1: per token the block's input (4096), wq (4096), wv (1024), SDPA's output (4096) and its fp32
  // log-sum-exp (32 heads, 64 16-bit elements), w1 (14336), w2 (4096); 2 bytes each.
  const double tokens = 2.0 * 8192.0;
  const double expected = tokens * (4096 + 4096 + 1024 + 4096 + 64 + 14336 + 4096) * 2.0;
  EXPECT_DOUBLE_EQ(dtsim::parallel::op_checkpoint_layer_bytes(s.model, plan.shape), expected);
  dtsim::model::Transformer t(s.model);
  const auto r = dtsim::parallel::estimate_memory(s, plan, t);
  const double full = dtsim::parallel::layer_activation_bytes(s.model, plan.shape, false);
  const double logits = tokens * double(s.model.vocab) * 14.0;  // the stack's loss_bytes_per_logit at tp 1
  const double final_norm = tokens * 4096.0 * 6.0;              // its final_norm_bytes_per_element
  // 32 layers keep their saved set; the loss's buffers outweigh one layer's recomputed rest, never held with them.
  ASSERT_GT(logits, full - expected);
  EXPECT_DOUBLE_EQ(r.stages[0].activations_bytes, 32.0 * expected + logits + final_norm);
}

TEST(OpCheckpoint, SavesLessThanTheLayersItLeavesWhole)
{
  const auto op = dtsim::scenario::load_scenario(source_path(kSacRow), {});
  const auto layer = dtsim::scenario::load_scenario(source_path(kSacRow), {"training.saved_activations=layer"});
  const auto op_plan = dtsim::parallel::derive_plan(op);
  EXPECT_LT(dtsim::parallel::op_checkpoint_layer_bytes(op.model, op_plan.shape),
            dtsim::parallel::layer_activation_bytes(op.model, op_plan.shape, false) / 2);
  EXPECT_LT(dtsim::app::check_fit(op).memory.peak_bytes(), dtsim::app::check_fit(layer).memory.peak_bytes());
}

TEST(OpCheckpoint, UnderTensorParallelKeepsTheReduceScatteredOutputs)
{
  const auto s = dtsim::scenario::load_scenario(
      source_path(kSacRow),
      {"parallel.tp=8", "parallel.dp=1", "parallel.zero=0", "parallel.sp=true", "training.global_batch=2"});
  const auto plan = dtsim::parallel::derive_plan(s);
  const double per_token = 4096.0 / 8 + 4096.0 / 8 + 1024.0 / 8 + 4096.0 / 8 + 64.0 / 8 + 14336.0 / 8 + 4096.0 +
                           2.0 * 4096.0 / 8;
  EXPECT_DOUBLE_EQ(dtsim::parallel::op_checkpoint_layer_bytes(s.model, plan.shape), 2.0 * 8192.0 * per_token * 2.0);
}

std::string checkpoint_load_error(const std::vector<std::string>& sets)
{
  try {
    dtsim::scenario::load_scenario(source_path(kSacRow), sets);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(OpCheckpoint, NeedsFullRecomputationAndADenseModel)
{
  EXPECT_NE(checkpoint_load_error({"training.recompute=selective"}).find("training.saved_activations"),
            std::string::npos);
  EXPECT_NE(checkpoint_load_error({"model=" + source_path("models/mixtral-8x7b.yaml")}).find("without experts"),
            std::string::npos);
}

TEST(LossBuffers, TheStackGivesBytesPerLogitByVocabularySplit)
{
  dtsim::stack::StackSpec st;
  EXPECT_DOUBLE_EQ(dtsim::parallel::loss_bytes_per_logit(st, 1, 2), 10.0);  // 16-bit logits + two fp32 copies
  EXPECT_DOUBLE_EQ(dtsim::parallel::loss_bytes_per_logit(st, 8, 4), 12.0);
  st.memory.loss_bytes_per_logit = 12;
  st.memory.loss_parallel_bytes_per_logit = 16;
  EXPECT_DOUBLE_EQ(dtsim::parallel::loss_bytes_per_logit(st, 1, 2), 12.0);
  EXPECT_DOUBLE_EQ(dtsim::parallel::loss_bytes_per_logit(st, 8, 2), 16.0);
}

}  // namespace
