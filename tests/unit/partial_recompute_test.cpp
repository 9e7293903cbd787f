// training.recompute_layers: full recomputation of only the first N layers of each model chunk (Megatron-LM's
// --recompute-method block --recompute-num-layers N). On tiny-gpt (4 layers, h 256, 8 heads, sequence 512, micro
// batch 4) with tp 2 and no sequence parallelism.
#include <gtest/gtest.h>

#include <algorithm>

#include "kernels/compute_model.hpp"
#include "parallel/memory.hpp"
#include "parallel/plan_space.hpp"
#include "replay/step_program.hpp"
#include "run_json.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"
#include "tiny_scenario.hpp"

using dtsim::parallel::derive_plan;

namespace {

using dtsim::test::rel_diff;
using dtsim::test::source_path;

using dtsim::test::tiny_scenario;

// One stage of 4 layers, 1F1B: one microbatch in flight. A recomputed layer keeps its 16-bit input, 2 sbh bytes; a
// kept layer all of Korthikanti's 10 + 24/t + 5as/(ht) = 10 + 12 + 40 = 62 sbh. Going from 4 recomputed layers to 1
// keeps 3 more layers whole.
TEST(PartialRecompute, MemoryOfTheLayersKeptWhole)
{
  auto all = tiny_scenario({"parallel.pp=1", "training.recompute=full"});
  auto one = tiny_scenario({"parallel.pp=1", "training.recompute=full", "training.recompute_layers=1"});
  dtsim::model::Transformer t(all.model);
  const double sbh = 512.0 * 4 * 256;
  const auto a = dtsim::parallel::estimate_memory(all, derive_plan(all), t).stages.at(0);
  const auto b = dtsim::parallel::estimate_memory(one, derive_plan(one), t).stages.at(0);
  EXPECT_EQ(b.microbatches_in_flight, 1);
  EXPECT_DOUBLE_EQ(b.activations_bytes - a.activations_bytes, 3 * sbh * (62 - 2));
  EXPECT_DOUBLE_EQ(b.weights_bytes + b.gradients_bytes + b.optimizer_bytes,
                   a.weights_bytes + a.gradients_bytes + a.optimizer_bytes);
}

// Block method: the chunk's first layer is recomputed, the three after it are not.
TEST(PartialRecompute, FirstLayersOfEachChunkAreRecomputed)
{
  auto s = tiny_scenario({"parallel.pp=1", "training.recompute=full", "training.recompute_layers=1"});
  dtsim::model::Transformer t(s.model);
  dtsim::kernels::ComputeModel cm(s.hardware.device, s.training.precision);
  auto prog = dtsim::replay::build_step_program(s, derive_plan(s), t, cm);
  std::vector<std::string> recomputed;
  for (const auto& st : prog.backward.at(0).at(0))
    if (st.recompute)
      recomputed.push_back(st.label);
  ASSERT_FALSE(recomputed.empty());
  for (const auto& label : recomputed)
    EXPECT_EQ(label, "recompute layer 0");
}

// Hardware FLOPs: recomputing 1 layer of 4 adds a quarter of what recomputing all 4 adds; model FLOPs do not move.
TEST(PartialRecompute, HardwareFlopsCountOnlyTheRecomputedLayers)
{
  auto all = tiny_scenario({"parallel.pp=1", "training.recompute=full"});
  auto one = tiny_scenario({"parallel.pp=1", "training.recompute=full", "training.recompute_layers=1"});
  dtsim::model::Transformer t(all.model);
  dtsim::kernels::ComputeModel cm(all.hardware.device, all.training.precision);
  auto a = dtsim::replay::build_step_program(all, derive_plan(all), t, cm);
  auto b = dtsim::replay::build_step_program(one, derive_plan(one), t, cm);
  EXPECT_DOUBLE_EQ(a.model_flops, b.model_flops);
  EXPECT_LT(rel_diff(b.hardware_flops - b.model_flops, (a.hardware_flops - a.model_flops) / 4), 1e-12);
}

// Recomputing every layer of the largest chunk is full recomputation: the same step, to the byte.
TEST(PartialRecompute, AllLayersOfAChunkIsFullRecomputation)
{
  auto full = dtsim::test::run_json("scenarios/tiny.yaml", " --set training.recompute=full");
  auto same = dtsim::test::run_json("scenarios/tiny.yaml",
                                    " --set training.recompute=full --set training.recompute_layers=1");
  EXPECT_EQ(full["step_time_s"], same["step_time_s"]);
  EXPECT_EQ(full["breakdown"], same["breakdown"]);
  EXPECT_EQ(same["plan"]["recompute_layers"], 1);
}

// On one stage with two microbatches the step's recomputation time scales with the recomputed layers: 1 of 4
// layers gives a quarter of full recomputation's, and the step lies between none and full.
TEST(PartialRecompute, RecomputationTimeScalesWithTheLayers)
{
  const std::string one_stage = " --set parallel.pp=1";
  auto none = dtsim::test::run_json("scenarios/tiny.yaml", one_stage);
  auto full = dtsim::test::run_json("scenarios/tiny.yaml", one_stage + " --set training.recompute=full");
  auto part = dtsim::test::run_json(
      "scenarios/tiny.yaml", one_stage + " --set training.recompute=full --set training.recompute_layers=1");
  const double r_full = full["breakdown"]["recompute_s"], r_part = part["breakdown"]["recompute_s"];
  EXPECT_GT(r_full, 0.0);
  EXPECT_LT(rel_diff(r_part, r_full / 4), 1e-9);
  EXPECT_LT(double(none["step_time_s"]), double(part["step_time_s"]));
  EXPECT_LT(double(part["step_time_s"]), double(full["step_time_s"]));
}

// The search's partial recomputation: where full recomputation fits, the plan recomputes the fewest layers per
// chunk that fit instead of every layer. GPT-3 175B on 64 A100 (Korthikanti et al. 2022's plan space, 4 layers per
// chunk at pp 8, vpp 3) has such plans; each one fits, and one fewer recomputed layer would not.
TEST(PartialRecompute, SearchRecomputesTheFewestLayersThatFit)
{
  auto base = dtsim::scenario::load_scenario(source_path("scenarios/validation/korthikanti-2022-175b-full.yaml"), {});
  dtsim::model::Transformer t(base.model);
  dtsim::parallel::PlanDimensions dims;
  dims.micro_batches = {1};
  dims.chunks = {1, 3};
  dims.recompute = {dtsim::scenario::Recompute::None, dtsim::scenario::Recompute::Full};
  dims.partial_recompute = true;
  auto space = dtsim::parallel::enumerate_plans(base, dims);
  dims.partial_recompute = false;
  auto every_layer = dtsim::parallel::enumerate_plans(base, dims);
  EXPECT_EQ(space.fitting.size(), every_layer.fitting.size());  // the same plans, recomputing less
  int partial = 0;
  for (const auto& s : space.fitting) {
    if (s.training.recompute_layers == 0)
      continue;
    ++partial;
    SCOPED_TRACE(dtsim::parallel::describe_plan(s));
    EXPECT_EQ(s.training.recompute, dtsim::scenario::Recompute::Full);
    EXPECT_TRUE(dtsim::parallel::estimate_memory(s, derive_plan(s), t).fits());
    auto fewer = s;
    fewer.training.recompute_layers -= 1;
    if (fewer.training.recompute_layers > 0) {
      EXPECT_FALSE(dtsim::parallel::estimate_memory(fewer, derive_plan(fewer), t).fits());
    }
  }
  EXPECT_GT(partial, 0);
  // The scenario's own plan with sequence parallelism: with the stack's fp32 main gradients, CUDA context and NCCL
  // buffers, recomputing the first 2 of 4 layers per chunk fits (70.7 GiB) and 1 of 4 does not (80.8 GiB).
  bool own = false;
  for (const auto& s : space.fitting)
    own = own || (dtsim::parallel::describe_plan(s) == "tp 8 pp 8 dp 1 vpp 3 sp mb 1 full 2 interleaved-1f1b");
  EXPECT_TRUE(own);
}

}  // namespace
