// Keys a scenario gives that change nothing in what it simulates (scenario/keys_without_effect.hpp): accepted, each
// a warning naming the file and line (or the --set), the key, the value and why; none where the key acts.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::test::source_path;

std::vector<std::string> warnings_of(const std::string& scenario, const std::vector<std::string>& sets)
{
  std::vector<std::string> w;
  for (const auto& d : dtsim::scenario::load_scenario(source_path(scenario), sets).warnings)
    w.push_back(d.where.file + (d.where.line ? ":" + std::to_string(d.where.line) : "") + " " + d.key_path + ": " +
                d.message);
  return w;
}

// training.fp8_recipe scales the GEMMs of precision fp8 only (model/transformer.cpp reads it under sh.fp8).
TEST(KeysWithoutEffect, Fp8RecipeUnderAnotherPrecision)
{
  EXPECT_EQ(warnings_of("scenarios/tiny.yaml", {"training.fp8_recipe=current"}),
            std::vector<std::string>{
                "<command line> --set training.fp8_recipe=current training.fp8_recipe: 'current' has no effect: the "
                "recipe scales the GEMMs of precision fp8 (Transformer Engine's per-tensor scaling), and precision "
                "is bf16, which casts nothing to fp8"});
  const auto mx = warnings_of("scenarios/validation/bridge-2511-llama3-8b-8-b200-mxfp8.yaml",
                              {"training.fp8_recipe=delayed"});
  ASSERT_EQ(mx.size(), 1u);
  EXPECT_NE(mx[0].find("precision is mxfp8, which scales per block as its own recipe fixes"), std::string::npos)
      << mx[0];
  // Under fp8 the recipe acts: no warning (the shipped run gives fp8_recipe: current).
  EXPECT_TRUE(warnings_of("scenarios/validation/bridge-2511-qwen3-235b-256.yaml", {}).empty());
}

// On wafer-scale hardware the GPU framework's keys are not read; the file's own lines are named.
TEST(KeysWithoutEffect, GpuKeysOnWaferScaleHardware)
{
  const auto w = warnings_of("tests/unit/data/wafer/small-cs2-gpu-keys.yaml", {"parallel.dp_bucket=25MB"});
  ASSERT_EQ(w.size(), 5u);
  const std::string file = source_path("tests/unit/data/wafer/small-cs2-gpu-keys.yaml");
  EXPECT_EQ(w[0].rfind(file + ":18 training.flash_attention: 'true' has no effect: on wafer-scale hardware (", 0),
            0u) << w[0];
  // The loss is the Cerebras compiler's (wafer_program.cpp), whatever GPU loss kernel the scenario names.
  EXPECT_EQ(w[1].rfind(file + ":19 training.cross_entropy: 'fused-te' has no effect: on wafer-scale hardware (", 0),
            0u) << w[1];
  EXPECT_NE(w[1].find("the Cerebras compiler lays out the loss itself"), std::string::npos) << w[1];
  EXPECT_EQ(w[2].rfind(file + ":21 placement.segment: '2' has no effect: on wafer-scale hardware (", 0), 0u) << w[2];
  EXPECT_EQ(w[3].rfind(file + ":9 parallel.dp_overlap: 'false' has no effect: on wafer-scale hardware (", 0), 0u)
      << w[3];
  EXPECT_NE(w[3].find("no gradient buckets to overlap or size"), std::string::npos) << w[3];
  EXPECT_EQ(w[4].rfind("<command line> --set parallel.dp_bucket=25MB parallel.dp_bucket: '25MB' has no effect", 0),
            0u) << w[4];
  EXPECT_TRUE(warnings_of("tests/unit/data/wafer/small-cs2.yaml", {}).empty());
  // On a GPU cluster both keys act: no warning.
  EXPECT_TRUE(warnings_of("scenarios/validation/bridge-2604-deepseek-v3-256-gb200-mxfp8.yaml", {}).empty());
}

// --seed (variability.seed) draws nothing where no spread is set, on GPU clusters and wafers alike; with a spread it
// acts.
TEST(KeysWithoutEffect, SeedWithoutVariability)
{
  const auto w = warnings_of("scenarios/tiny.yaml", {"variability.seed=2"});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(
      w[0].rfind("<command line> --set variability.seed=2 variability.seed: '2' has no effect: the seed draws", 0),
      0u)
      << w[0];
  EXPECT_EQ(warnings_of("tests/unit/data/wafer/small-cs2.yaml", {"variability.seed=2"}).size(), 1u);
  EXPECT_TRUE(
      warnings_of("scenarios/tiny.yaml", {"variability.seed=2", "variability.device_spread=0.01"}).empty());
  EXPECT_TRUE(warnings_of("scenarios/examples/gpt3-175b-h100x512-variability.yaml", {}).empty());
}

// parallel.moe_preprocess_graphed moves the host wait of the alltoall dispatcher only (replay/step_program.cpp);
// under the flex dispatcher (deepep, hybridep) it is named as having no effect, under alltoall it acts.
TEST(KeysWithoutEffect, PreprocessGraphedUnderFlexDispatcher)
{
  const std::string flex = "scenarios/validation/bridge-2604-qwen3-30b-8-b200-mxfp8.yaml";
  for (const char* dispatcher : {"deepep", "hybridep"}) {
    const auto w = warnings_of(flex, {std::string("parallel.moe_dispatcher=") + dispatcher,
                                      "parallel.moe_preprocess_graphed=true"});
    ASSERT_EQ(w.size(), 1u) << dispatcher;
    EXPECT_EQ(w[0].rfind("<command line> --set parallel.moe_preprocess_graphed=true parallel.moe_preprocess_graphed: "
                         "'true' has no effect: ",
                         0),
              0u) << w[0];
    EXPECT_NE(w[0].find(std::string("parallel.moe_dispatcher is ") + dispatcher), std::string::npos) << w[0];
  }
  // The shipped alltoall run graphs its preprocessing: the key acts, no warning.
  EXPECT_TRUE(warnings_of("scenarios/validation/bridge-2511-qwen3-30b-8-b200-mxfp8.yaml", {}).empty());
}

// parallel.moe_preprocess_graphed acts only where replay/step_program.cpp prices the alltoall dispatcher's host
// wait: in a model with experts, outside the paired schedules (parallel.ep_overlap), under a stack whose
// host.sync_resume is not 0. Elsewhere it is named as having no effect, with the first reason that holds.
TEST(KeysWithoutEffect, PreprocessGraphedWhereNoWaitIsPriced)
{
  const std::string deepseek = "scenarios/validation/deepseek-v3-2048-h800.yaml";  // dualpipe: pairs by default
  struct Case {
    std::string scenario;
    std::vector<std::string> sets;
    std::string why;
  };
  const Case cases[] = {
      {"scenarios/tiny.yaml", {}, "the model has no experts"},
      {deepseek, {"parallel.moe_dispatcher=alltoall"}, "the paired schedule (parallel.ep_overlap)"},
      {deepseek, {"parallel.moe_dispatcher=alltoall", "parallel.ep_overlap=false"},
       "hardware/stacks/nemo-2407-h100.yaml): the GPU does not idle"},
      {"scenarios/tiny-moe.yaml", {}, "hardware/stacks/megatron-lm-2022.yaml): the GPU does not idle"},
      {"scenarios/validation/bridge-2511-qwen3-30b-8-b200-mxfp8.yaml", {"stack=none"},
       "the stack's host.sync_resume is 0 (no stack)"},
  };
  for (const auto& c : cases) {
    auto sets = c.sets;
    sets.push_back("parallel.moe_preprocess_graphed=true");
    const auto w = warnings_of(c.scenario, sets);
    ASSERT_EQ(w.size(), 1u) << c.scenario << " " << c.why;
    EXPECT_NE(w[0].find("parallel.moe_preprocess_graphed: 'true' has no effect: "), std::string::npos) << w[0];
    EXPECT_NE(w[0].find(c.why), std::string::npos) << w[0];
  }
  // With its stack (host.sync_resume 20 us), the alltoall run without pairs acts: no warning.
  EXPECT_TRUE(warnings_of("scenarios/validation/bridge-2511-qwen3-30b-8-b200-mxfp8.yaml", {}).empty());
}

}  // namespace
