// Uneven pipeline stages (parallel.stage_layers): tiny-gpt's 4 layers on 3 stages as [1, 2, 1], checked by hand.
#include <gtest/gtest.h>

#include "kernels/compute_model.hpp"
#include "parallel/memory.hpp"
#include "replay/step_program.hpp"
#include "scenario/layer_partition.hpp"
#include "test_paths.hpp"

using dtsim::parallel::derive_plan;

namespace {

using dtsim::test::source_path;

// Whether a unit runs a given layer (its kernels, split by tensor-parallel collectives, share the label).
bool runs(const std::vector<dtsim::replay::Step>& steps, const std::string& label)
{
  for (const auto& st : steps)
    if (st.kind == dtsim::replay::Step::Kind::Compute && st.label == label)
      return true;
  return false;
}

// The step program of a scenario, as the replay builds it.
dtsim::replay::StepProgram program_of_scenario(const dtsim::scenario::ScenarioSpec& s)
{
  dtsim::model::Transformer t(s.model);
  dtsim::kernels::ComputeModel cm(s.hardware.device, s.training.precision);
  return dtsim::replay::build_step_program(s, derive_plan(s), t, cm);
}

TEST(LayerPartition, UnevenStagesRunAndHoldTheirOwnLayers)
{
  auto s = dtsim::scenario::load_scenario(
      source_path("scenarios/tiny.yaml"),
      {"devices=24", "parallel.pp=3", "parallel.stage_layers=[1, 2, 1]"});
  EXPECT_EQ(dtsim::scenario::chunk_layers(s), (std::vector<int64_t>{1, 2, 1}));
  EXPECT_EQ(dtsim::scenario::first_layer(s, 2), 3);
  const auto prog = program_of_scenario(s);
  // Kernels are labelled with their global layer index.
  EXPECT_TRUE(runs(prog.forward[0][0], "forward layer 0"));
  EXPECT_FALSE(runs(prog.forward[0][0], "forward layer 1"));
  EXPECT_TRUE(runs(prog.forward[1][0], "forward layer 1"));
  EXPECT_TRUE(runs(prog.forward[1][0], "forward layer 2"));
  EXPECT_TRUE(runs(prog.forward[2][0], "forward layer 3"));
  EXPECT_FALSE(runs(prog.forward[2][0], "forward layer 2"));
  EXPECT_TRUE(runs(prog.backward[1][0], "backward layer 2"));
  // The middle stage holds two layers of 395,648 parameters per tp-2 rank (see zero_test.cpp).
  auto mem = dtsim::parallel::estimate_memory(s, derive_plan(s), dtsim::model::Transformer(s.model));
  EXPECT_DOUBLE_EQ(mem.stages[1].params, 2 * 395648.0);
}

// Llama 3's balanced pipeline (Llama Team 2024, Sec. 3.3.2): the first chunk holds only the embedding, the last
// only the output head. tiny-gpt's 4 layers on pp 2, vpp 2 as [0, 2, 2, 0]: stage 0 runs chunk 0 (embedding) and
// chunk 2 (layers 2, 3); stage 1 runs chunk 1 (layers 0, 1) and chunk 3 (head).
TEST(LayerPartition, EmptyEndChunksHoldOnlyTheEmbeddingOrTheHead)
{
  auto s = dtsim::scenario::load_scenario(source_path("scenarios/tiny.yaml"),
                                          {"devices=8", "parallel.pp=2", "parallel.vpp=2", "schedule=interleaved-1f1b",
                                           "parallel.stage_layers=[0, 2, 2, 0]"});
  const auto prog = program_of_scenario(s);
  EXPECT_TRUE(runs(prog.forward[0][0], "forward embedding"));
  EXPECT_FALSE(runs(prog.forward[0][0], "forward layer 0"));
  EXPECT_TRUE(runs(prog.backward[0][0], "backward embedding"));
  EXPECT_TRUE(runs(prog.forward[1][0], "forward layer 0"));
  EXPECT_TRUE(runs(prog.forward[1][0], "forward layer 1"));
  EXPECT_TRUE(runs(prog.forward[0][1], "forward layer 2"));
  EXPECT_TRUE(runs(prog.forward[1][1], "forward head"));
  EXPECT_FALSE(runs(prog.forward[1][1], "forward layer 3"));
  // Stage 0: two layers (395,648 parameters each per tp-2 rank, see zero_test.cpp), the 1024 x 256 / 2 word
  // embeddings and the 512 x 256 learned positions (whole on every rank); stage 1: two layers, the final norm
  // (2 x 256) and its copy of the tied embeddings.
  auto mem = dtsim::parallel::estimate_memory(s, derive_plan(s), dtsim::model::Transformer(s.model));
  EXPECT_DOUBLE_EQ(mem.stages[0].params, 2 * 395648.0 + 1024 * 256 / 2 + 512 * 256);
  EXPECT_DOUBLE_EQ(mem.stages[1].params, 2 * 395648.0 + 2 * 256 + 1024 * 256 / 2);
}

TEST(LayerPartition, EvenListEqualsDefaultSplit)
{
  auto even = dtsim::scenario::load_scenario(source_path("scenarios/tiny.yaml"), {});
  auto listed = dtsim::scenario::load_scenario(source_path("scenarios/tiny.yaml"),
                                               {"parallel.stage_layers=[1, 1, 1, 1]"});
  dtsim::model::Transformer t(even.model);
  auto a = dtsim::parallel::estimate_memory(even, derive_plan(even), t);
  auto b = dtsim::parallel::estimate_memory(listed, derive_plan(listed), t);
  for (size_t i = 0; i < a.stages.size(); ++i)
    EXPECT_DOUBLE_EQ(a.stages[i].total_bytes(), b.stages[i].total_bytes());
}

}  // namespace
