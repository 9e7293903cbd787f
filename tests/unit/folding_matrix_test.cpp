// Folding on shared fabrics (issue 13, section 1): the folded replay (one device per stage) against the replay of
// every device, within 0.5%, on fabrics where GPUs share NICs (4, 2 and 1 per node of 8) and uplinks are
// oversubscribed (1, 2, 4, 8; fat tree and rail-optimized), with 1F1B and interleaved schedules and pipelines of 2 to
// 32 stages, on BLOOM's Jean Zay network, with experts and a context-parallel ring whose all-to-alls and rings cross
// the shared links. The folded replay must also say it is exact there (simulation.folding_exact), and say it is
// approximate where the ranks of a stage do not all see the same routes (a stage that ends inside a node).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "run_json.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::test::dtsim_binary;
using dtsim::test::rel_diff;

struct MatrixCase {
  std::string name;
  std::string scenario;
  std::string sets;
};

std::string fabric(int nics, const char* topology, int oversubscription)
{
  // Leaves of 8 NIC ports (16-port switches): a node of 8 NICs is one leaf, so with oversubscription every flow
  // between nodes crosses an uplink that 8 NICs share.
  return " --set hardware.network.nics_per_node=" + std::to_string(nics) +
         " --set hardware.network.topology.type=" + topology +
         " --set hardware.network.topology.levels=2 --set hardware.network.topology.switch_radix=16"
         " --set hardware.network.topology.oversubscription=" +
         std::to_string(oversubscription);
}

// 4, 2 and 1 NICs per node x fat tree and rail-optimized x oversubscription 1, 2, 4, 8: 24 fabrics, each with one
// of pp 2, 4, 8, 16, 32 in turn and 1F1B and interleaved in turn (tiny-gpt with two layers per stage, tp 2).
std::vector<MatrixCase> fabric_cases()
{
  std::vector<MatrixCase> out;
  const int pps[] = {2, 4, 8, 16, 32};
  int i = 0;
  for (int nics : {4, 2, 1})
    for (const char* topology : {"fat-tree", "rail-optimized"})
      for (int os : {1, 2, 4, 8}) {
        const int pp = pps[i % 5];
        const bool interleaved = i % 2 == 1;
        ++i;
        const int dp = pp < 32 ? 64 / (2 * pp) : 2, gb = dp * 4 * pp * 2;
        std::string sets = fabric(nics, topology, os) + " --set model.num_hidden_layers=" + std::to_string(2 * pp) +
                           " --set devices=" + std::to_string(2 * pp * dp) + " --set parallel.pp=" +
                           std::to_string(pp) + " --set parallel.dp=" + std::to_string(dp) +
                           " --set training.global_batch=" + std::to_string(gb);
        sets += interleaved ? " --set schedule=interleaved-1f1b --set parallel.vpp=2" : " --set schedule=1f1b";
        out.push_back({"nics" + std::to_string(nics) + "_" + (topology[0] == 'f' ? "fattree" : "rail") + "_os" +
                           std::to_string(os) + "_pp" + std::to_string(pp) + (interleaved ? "_interleaved" : "_1f1b"),
                       "scenarios/tiny.yaml", sets});
      }
  return out;
}

std::vector<MatrixCase> other_cases()
{
  return {
      // BLOOM's plan shape (tp 4, pp 12) on Jean Zay's 4 Omni-Path NICs per node: two TP ranks share each NIC.
      {"bloom_jean_zay_tp4_pp12", "scenarios/tiny.yaml",
       " --set hardware=../hardware/jean-zay-a100-80gb.yaml --set model.num_hidden_layers=24 --set devices=96"
       " --set parallel.tp=4 --set parallel.pp=12 --set parallel.dp=2 --set training.global_batch=96"
       " --set training.micro_batch=2"},
      // Expert all-to-alls across nodes through one NIC per node, and over oversubscribed uplinks.
      {"experts_ep8_one_nic", "scenarios/tiny-moe.yaml",
       fabric(1, "rail-optimized", 1) +
           " --set devices=32 --set parallel.tp=1 --set parallel.ep=8 --set model.num_local_experts=16"
           " --set training.global_batch=128"},
      {"experts_ep16_fattree_os4", "scenarios/tiny-moe.yaml",
       fabric(8, "fat-tree", 4) +
           " --set devices=64 --set parallel.ep=16 --set model.num_local_experts=16 --set training.global_batch=128"},
      {"context_parallel_cp2_one_nic", "scenarios/tiny.yaml",
       fabric(1, "rail-optimized", 1) + " --set devices=64 --set parallel.dp=4 --set parallel.cp=2"},
      // A tensor-parallel group of 16 across two nodes on shared NICs: its flows and every replica's are simulated.
      {"tp16_across_nodes_two_nics", "scenarios/tiny.yaml",
       fabric(2, "rail-optimized", 1) +
           " --set devices=64 --set parallel.tp=16 --set parallel.pp=2 --set parallel.dp=2"
           " --set model.num_attention_heads=16"},
      {"blocking_pipeline_one_nic", "scenarios/tiny.yaml",
       fabric(1, "rail-optimized", 1) + " --set devices=64 --set parallel.dp=8 --set parallel.pp_overlap=false"},
      {"zero_bubble_one_nic", "scenarios/tiny.yaml",
       fabric(1, "rail-optimized", 1) +
           " --set devices=64 --set parallel.dp=8 --set parallel.pp_overlap=true --set schedule=zb-h1"},
      {"dualpipe_fattree_os4", "scenarios/tiny.yaml",
       fabric(8, "fat-tree", 4) + " --set devices=64 --set parallel.dp=8 --set parallel.pp_overlap=true"
                                  " --set schedule=dualpipe --set training.global_batch=256"},
      // Data-parallel groups of one rank per node (tp 8) under an NCCL with PAT: the gradient reduce-scatter and the
      // parameter all-gather (ZeRO 1) run as PAT over 8 nodes (collectives/algorithms/pat.cpp).
      {"pat_tp8_one_rank_per_node", "scenarios/tiny.yaml",
       " --set stack=" + dtsim::test::source_path("tests/unit/data/stack-nccl-pat.yaml") +
           " --set devices=128 --set parallel.tp=8 --set parallel.pp=2"
       " --set parallel.dp=8 --set parallel.zero=1 --set training.global_batch=128"},
      // zb-v: transfers down and back up the stages, the last stage's hand-off kept on the device.
      {"zb_v_fattree_os4", "scenarios/tiny.yaml",
       fabric(8, "fat-tree", 4) + " --set devices=64 --set parallel.dp=16 --set parallel.pp=2 --set parallel.vpp=2"
                                  " --set parallel.pp_overlap=true --set schedule=zb-v"
                                  " --set training.global_batch=256"},
  };
}

nlohmann::json run(const MatrixCase& c, const std::string& more)
{
  return dtsim::test::run_json(c.scenario, c.sets + more);
}

class FoldingMatrix : public ::testing::TestWithParam<MatrixCase> {};

TEST_P(FoldingMatrix, FoldedWithinHalfAPercentOfFullAndSaysItIsExact)
{
  if (dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  const MatrixCase& c = GetParam();
  auto folded = run(c, ""), full = run(c, " --set simulation.fidelity=full");
  ASSERT_EQ(folded.at("plan").at("fidelity"), "folded");
  ASSERT_EQ(full.at("plan").at("fidelity"), "full");
  ASSERT_LT(folded.at("simulation").at("simulated_devices").get<int64_t>(),
            full.at("simulation").at("simulated_devices").get<int64_t>());
  const double a = folded.at("step_time_s").get<double>(), b = full.at("step_time_s").get<double>();
  std::printf("[folding] %-40s folded %.9g s, full %.9g s, error %.2e\n", c.name.c_str(), a, b, rel_diff(a, b));
  EXPECT_LT(rel_diff(a, b), 0.005) << c.name << ": folded " << a << " s, full " << b << " s";
  EXPECT_TRUE(folded.at("simulation").at("folding_exact").get<bool>())
      << folded.at("simulation").value("folding_note", std::string());
}

INSTANTIATE_TEST_SUITE_P(SharedFabrics, FoldingMatrix, ::testing::ValuesIn(fabric_cases()),
                         [](const ::testing::TestParamInfo<MatrixCase>& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(PlansAndNetworks, FoldingMatrix, ::testing::ValuesIn(other_cases()),
                         [](const ::testing::TestParamInfo<MatrixCase>& info) { return info.param.name; });

// Stages of 6 GPUs (tp 2, dp 3) on nodes of 8: the first stage's representative sends its activations within its node,
// other ranks across nodes. Folding is not exact by symmetry (7% off the full replay on one NIC per node when this was
// written); the report says so and names the full replay, on shared NICs as on NICs of their own.
TEST(FoldingMatrix, StageEndingInsideANodeIsReportedApproximate)
{
  if (dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  for (int nics : {8, 1}) {
    MatrixCase c{"dp3", "scenarios/tiny.yaml",
                 fabric(nics, "rail-optimized", 1) +
                     " --set devices=24 --set parallel.dp=3 --set training.global_batch=48"};
    auto folded = run(c, "");
    EXPECT_FALSE(folded.at("simulation").at("folding_exact").get<bool>()) << nics << " NICs";
    const std::string note = folded.at("simulation").value("folding_note", std::string());
    EXPECT_NE(note.find("simulation.fidelity: full"), std::string::npos) << note;
    auto full = run(c, " --set simulation.fidelity=full");
    EXPECT_TRUE(full.at("simulation").at("folding_exact").get<bool>());  // nothing folded, nothing to warn about
    std::printf("[folding] dp3 on %d NICs per node: folded %.9g s, full %.9g s\n", nics,
                folded.at("step_time_s").get<double>(), full.at("step_time_s").get<double>());
  }
}

// Expert groups across NVL72 racks (72 GPUs hold no whole number of groups of 32 or 64): Qwen3-235B-A22B on 512 GB200
// (scenarios/bench/qwen3-235b-gb200-512.yaml, shrunk to 4 or 8 layers and 4 microbatches so that every device can be
// replayed), tp 2, experts whole on every TP rank. Some pipelines' expert groups send more of their all-to-all over
// the NICs than others; the folded replay must replay the slowest (Placement::represent_slowest_pipeline). It
// cannot be exact: the every-device replay's data-parallel collectives wait, bucket by bucket, for whichever pipeline
// is last there, so folded stays a little below full. Measured (2026-11-28, wt-fold15): folded / full - 1 = -1.1%,
// -1.9% and -1.1%; replaying rank order's first pipeline, as before, gave -18.0%, -26.0% and -28.8%.
TEST(FoldingMatrix, ExpertGroupsAcrossNvlRacksReplayTheSlowestPipeline)
{
  if (dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  const std::string shrunk = " --set training.global_batch=512";
  for (const MatrixCase& c : {MatrixCase{"ep64_pp2", "scenarios/bench/qwen3-235b-gb200-512.yaml",
                                         shrunk + " --set model.num_hidden_layers=4"},
                              MatrixCase{"ep32_pp2", "scenarios/bench/qwen3-235b-gb200-512.yaml",
                                         shrunk + " --set model.num_hidden_layers=4 --set parallel.ep=32"},
                              MatrixCase{"ep32_pp4", "scenarios/bench/qwen3-235b-gb200-512.yaml",
                                         shrunk + " --set model.num_hidden_layers=8 --set parallel.ep=32"
                                                  " --set parallel.pp=4"}}) {
    auto folded = run(c, ""), full = run(c, " --set simulation.fidelity=full");
    const double a = folded.at("step_time_s").get<double>(), b = full.at("step_time_s").get<double>();
    std::printf("[folding] %-40s folded %.9g s, full %.9g s, error %.2e\n", c.name.c_str(), a, b, a / b - 1);
    EXPECT_LT(rel_diff(a, b), 0.025) << c.name << ": folded " << a << " s, full " << b << " s";
    EXPECT_LE(a, b * (1 + 1e-9)) << c.name;
    EXPECT_FALSE(folded.at("simulation").at("folding_exact").get<bool>()) << c.name;
  }
}

// A context-parallel ring across NVL72 racks, and the representative's tie-break under every kind of schedule: the tiny
// GPT on 224 GB200 (tp 1, pp 2, cp 16, dp 7; ScaleUpDomain.ContextParallelRingsAcrossRacksTieOnTheLaterStage), where
// pipeline 64's ring straddles two racks on stage 0 and pipeline 96's on stage 1, a tie that the later stage decides.
// Measured (2026-11-28, wt-house16): folded / full - 1 = +0.19% under 1f1b, interleaved-1f1b, zb-v and zb-h1, +0.11%
// under dualpipe; with the tie going to the earlier stage (pipeline 64) instead, -6.4%, -2.9%, -3.0%, -5.4% and -3.8%.
TEST(FoldingMatrix, ContextParallelRingsAcrossNvlRacksReplayTheSlowestPipeline)
{
  if (dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  const std::string plan = " --set devices=224 --set parallel.tp=1 --set parallel.pp=2 --set parallel.cp=16"
                           " --set parallel.dp=7 --set training.global_batch=56";
  const std::string scenario = "tests/unit/data/tiny-gb200.yaml";
  for (const MatrixCase& c :
       {MatrixCase{"cp16_1f1b", scenario, plan},
        MatrixCase{"cp16_interleaved", scenario, plan + " --set schedule=interleaved-1f1b --set parallel.vpp=2"},
        MatrixCase{"cp16_zb_v", scenario,
                   plan + " --set schedule=zb-v --set parallel.vpp=2 --set parallel.pp_overlap=true"},
        MatrixCase{"cp16_zb_h1", scenario, plan + " --set schedule=zb-h1 --set parallel.pp_overlap=true"},
        MatrixCase{"cp16_dualpipe", scenario,
                   plan + " --set schedule=dualpipe --set parallel.pp_overlap=true --set training.global_batch=112"}}) {
    auto folded = run(c, ""), full = run(c, " --set simulation.fidelity=full");
    const double a = folded.at("step_time_s").get<double>(), b = full.at("step_time_s").get<double>();
    std::printf("[folding] %-40s folded %.9g s, full %.9g s, error %.2e\n", c.name.c_str(), a, b, a / b - 1);
    EXPECT_LT(rel_diff(a, b), 0.005) << c.name << ": folded " << a << " s, full " << b << " s";
    const std::string note = folded.at("simulation").value("folding_note", std::string());
    EXPECT_NE(note.find("the pipeline replayed (96 of 112)"), std::string::npos) << c.name << ": " << note;
  }
}

}  // namespace
