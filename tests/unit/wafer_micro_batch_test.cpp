// The micro batch a wafer-scale system picks when the scenario leaves it to the compiler (wafer/micro_batch.hpp),
// against hand computations on the small test GPT (tests/unit/data/wafer/small-model.yaml: h 1024, 4 layers,
// f 4h, 16 heads) on one CS-2 (40 GB of SRAM), sequence 1024, fp16, weight streaming.
//
// On-wafer SRAM in weight streaming (wafer_program.cpp, docs/wafer.md):
//   three layers' 16-bit weights      3 * 2 * (12h^2 + 13h)                 = 75,577,344 B
//   + per sample, no recomputation:   4 layers * 34 * s * h (Korthikanti et al. 2022 without the attention
//                                     scores, which the wafer never holds)  = 142,606,336 B
//                                     + the loss's running max and sum, 8 B per token = 8,192 B
//   + per sample, full recomputation: the layer inputs are held off the wafer; on it, one layer's 34 * s * h being
//                                     recomputed + the inputs of two layers, 2 * 2 * s * h + 8 B per token
//                                                                           = 39,854,080 B
// Largest micro batch that fits in 40e9 B: without recomputation (40e9 - 75,577,344) / 142,614,528 = 279.95, so
// 279; with full recomputation (40e9 - 75,577,344) / 39,854,080 = 1001.8, so 1001.
// Every number below is computed from these, not copied from the program's output. No simulation runs here.
#include <gtest/gtest.h>

#include "app/load.hpp"
#include "core/diagnostics.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"
#include "systems/cerebras_wafer/micro_batch.hpp"

namespace {

using dtsim::test::source_path;

constexpr double kWeights = 3 * 2 * (12.0 * 1024 * 1024 + 13 * 1024);
constexpr double kPerSampleNone = 4 * 34.0 * 1024 * 1024 + 8 * 1024;
constexpr double kPerSampleFull = 2 * 2.0 * 1024 * 1024 + 34.0 * 1024 * 1024 + 8 * 1024;

dtsim::scenario::ScenarioSpec load_micro_batch_scenario(const std::vector<std::string>& overrides = {})
{
  return dtsim::scenario::load_scenario(source_path("tests/unit/data/wafer/small-cs2-auto.yaml"), overrides);
}

TEST(WaferMicroBatch, HandFormulasAgree)
{
  // The hand numbers quoted above, so that a slip in them fails here first.
  EXPECT_DOUBLE_EQ(kWeights, 75577344);
  EXPECT_DOUBLE_EQ(kPerSampleNone, 142614528);
  EXPECT_DOUBLE_EQ(kPerSampleFull, 39854080);
  EXPECT_LE(kWeights + 279 * kPerSampleNone, 40e9);
  EXPECT_GT(kWeights + 280 * kPerSampleNone, 40e9);
  EXPECT_LE(kWeights + 1001 * kPerSampleFull, 40e9);
  EXPECT_GT(kWeights + 1002 * kPerSampleFull, 40e9);
}

TEST(WaferMicroBatch, KeyLeftOutMeansAutoOnWafer)
{
  auto s = load_micro_batch_scenario();
  EXPECT_TRUE(s.training.micro_batch_auto);
  auto given = load_micro_batch_scenario({"training.micro_batch=8"});
  EXPECT_FALSE(given.training.micro_batch_auto);
  EXPECT_EQ(given.training.micro_batch, 8);
  auto written = load_micro_batch_scenario({"training.micro_batch=auto"});
  EXPECT_TRUE(written.training.micro_batch_auto);
}

TEST(WaferMicroBatch, LargestDivisorThatFitsWithoutRecomputation)
{
  // Divisors of 560 around 279: 140 fits, 280 does not (by 7.6 MB).
  auto s = load_micro_batch_scenario();
  auto c = dtsim::wafer::choose_micro_batch(s);
  EXPECT_TRUE(c.fits);
  EXPECT_EQ(c.system_batch, 560);
  EXPECT_EQ(c.micro_batch, 140);
  EXPECT_DOUBLE_EQ(c.sram_bytes, kWeights + 140 * kPerSampleNone);
  EXPECT_EQ(c.next_micro_batch, 280);
  EXPECT_DOUBLE_EQ(c.next_sram_bytes, kWeights + 280 * kPerSampleNone);
  EXPECT_DOUBLE_EQ(c.capacity_bytes, 40e9);
}

TEST(WaferMicroBatch, FullRecomputationFitsMore)
{
  // 2002 = 2 * 1001: 1001 fits exactly below the limit, the whole batch does not.
  auto s = load_micro_batch_scenario({"training.recompute=full", "training.global_batch=2002"});
  auto c = dtsim::wafer::choose_micro_batch(s);
  EXPECT_EQ(c.micro_batch, 1001);
  EXPECT_DOUBLE_EQ(c.sram_bytes, kWeights + 1001 * kPerSampleFull);
  EXPECT_EQ(c.next_micro_batch, 2002);
}

TEST(WaferMicroBatch, WholeBatchWhenEverythingFits)
{
  auto s = load_micro_batch_scenario({"training.global_batch=64"});
  auto c = dtsim::wafer::choose_micro_batch(s);
  EXPECT_EQ(c.micro_batch, 64);
  EXPECT_EQ(c.next_micro_batch, 0);
  EXPECT_EQ(c.reason(s.training.recompute).find(" would need "), std::string::npos);
}

TEST(WaferMicroBatch, DividesEachSystemsBatch)
{
  // Two systems share 1120 samples: 560 each, so the same choice as one system with 560.
  auto s = load_micro_batch_scenario({"devices=2", "parallel.dp=2", "training.global_batch=1120"});
  auto c = dtsim::wafer::choose_micro_batch(s);
  EXPECT_EQ(c.system_batch, 560);
  EXPECT_EQ(c.micro_batch, 140);
}

TEST(WaferMicroBatch, NoneFits)
{
  // GPT-3 175B without recomputation: one sample's activations alone, 96 * 34 * 2048 * 12288 B = 82 GB, exceed
  // the SRAM; the choice falls back to 1 and says so (the run then reports that it does not fit, exit 3).
  auto s = load_micro_batch_scenario(
      {"model=../../../../models/gpt3-175b.yaml", "training.seq_len=2048", "training.global_batch=16"});
  auto c = dtsim::wafer::choose_micro_batch(s);
  EXPECT_FALSE(c.fits);
  EXPECT_EQ(c.micro_batch, 1);
  EXPECT_GT(c.sram_bytes, 96 * 34.0 * 2048 * 12288);
  EXPECT_NE(c.reason(s.training.recompute).find("none fits"), std::string::npos);
}

TEST(WaferMicroBatch, ResolvedScenarioSaysWhatAndWhy)
{
  auto s = dtsim::app::load_for_simulation(source_path("tests/unit/data/wafer/small-cs2-auto.yaml"), {});
  EXPECT_EQ(s.training.micro_batch, 140);
  EXPECT_EQ(s.microbatches, 4);  // 560 / 140 passes per step
  EXPECT_NE(s.training.micro_batch_reason.find("largest divisor of 560 samples per system"), std::string::npos);
  EXPECT_NE(s.training.micro_batch_reason.find("280 would need"), std::string::npos);
  // A micro batch set in the scenario is kept as it is, with no reason.
  auto fixed = dtsim::app::load_for_simulation(source_path("tests/unit/data/wafer/small-cs2-auto.yaml"),
                                               {"training.micro_batch=7"});
  EXPECT_EQ(fixed.training.micro_batch, 7);
  EXPECT_EQ(fixed.microbatches, 80);
  EXPECT_TRUE(fixed.training.micro_batch_reason.empty());
}

TEST(WaferMicroBatch, AutoOnGpuIsAnInputError)
{
  try {
    dtsim::scenario::load_scenario(source_path("scenarios/tiny.yaml"), {"training.micro_batch=auto"});
    FAIL() << "expected a ConfigError";
  } catch (const dtsim::ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("training.micro_batch: expected an integer >= 1 on a GPU cluster"), std::string::npos) << what;
    EXPECT_NE(what.find("got auto"), std::string::npos) << what;
  }
}

}  // namespace
