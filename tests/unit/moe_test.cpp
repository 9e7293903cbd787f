// Mixture of experts (models/tiny-moe.yaml: h 256, 4 layers, 8 heads, ffn 512, 4 experts, 2 per token, vocab
// 1024; scenarios/tiny-moe.yaml: tp 2, ep 4, dp 8, sp, micro batch 4, sequence 512), against hand computations.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kernels/compute_model.hpp"
#include "parallel/memory.hpp"
#include "replay/step_program.hpp"
#include "scenario/scenario_spec.hpp"
#include "run_json.hpp"
#include "test_paths.hpp"
#include "tiny_scenario.hpp"

using dtsim::parallel::derive_plan;

namespace {

using dtsim::test::tiny_moe;

using dtsim::replay::Step;
using dtsim::test::rel_diff;
using dtsim::test::source_path;

// Bytes of each expert all-to-all in layer 1's forward on stage 0, chunk 0.
std::vector<double> layer1_forward_all_to_all_bytes(const dtsim::scenario::ScenarioSpec& s)
{
  dtsim::model::Transformer t(s.model);
  dtsim::kernels::ComputeModel cm(s.hardware.device, s.training.precision);
  auto prog = dtsim::replay::build_step_program(s, derive_plan(s), t, cm);
  std::vector<double> bytes;
  for (const auto& st : prog.forward[0][0])
    if (st.kind == Step::Kind::EpCollective && st.label.find("layer 1") != std::string::npos)
      bytes.push_back(st.bytes);
  return bytes;
}

TEST(Moe, ParametersByHand)
{
  auto s = tiny_moe();
  dtsim::model::Transformer t(s.model);
  // Attention 4 h^2 (no biases, 8 KV heads = heads); 4 gated experts of 3 * h * ffn; router h * 4; two RMSNorms.
  EXPECT_DOUBLE_EQ(t.layer_params(), 262144.0 + 1572864.0 + 1024.0 + 512.0);
  // Per rank with tp 2, ep 4: attention halved, one expert halved, router and norms whole.
  EXPECT_DOUBLE_EQ(t.layer_expert_params_per_rank(2, 4), 3.0 * 256 * 512 / 2);
  EXPECT_DOUBLE_EQ(t.layer_params_per_rank(2, 4), 262144.0 / 2 + 3.0 * 256 * 512 / 2 + 1024 + 512);
  // Mixtral 8x7B: 46.7B parameters (Jiang et al. 2024).
  auto mix = dtsim::test::load_model_or_throw("models/mixtral-8x7b.yaml");
  EXPECT_LT(rel_diff(dtsim::model::Transformer(mix).total_params(4096), 46.7e9), 0.005);
}

// The busiest expert gets 1.5 x the mean; its rank also holds experts / ep - 1 experts at the mean.
TEST(Moe, RankImbalanceByHand)
{
  auto mix = dtsim::test::load_model_or_throw("models/mixtral-8x7b.yaml");  // 8 experts
  EXPECT_DOUBLE_EQ(dtsim::model::expert_rank_imbalance(mix, 1.5, 8), 1.5);                  // one expert per rank
  EXPECT_DOUBLE_EQ(dtsim::model::expert_rank_imbalance(mix, 1.5, 4), (1.5 + 1.0) / 2);      // two per rank
  EXPECT_DOUBLE_EQ(dtsim::model::expert_rank_imbalance(mix, 1.5, 1), (1.5 + 7 * 1.0) / 8);  // all: none
}

TEST(Moe, FlopsCountTheActiveExpertsAndTheRouter)
{
  auto s = tiny_moe();
  dtsim::model::Transformer t(s.model);
  const double T = 2048, sq = 512, h = 256, f = 512;
  // qkv 2*T*h*3h, scores and values 2 * 2*T*s*h, projection 2*T*h*h, 2 experts of 3 GEMMs 2*T*h*f, router 2*T*h*4.
  const double expected = 2 * T * h * 3 * h + 4 * T * sq * h + 2 * T * h * h + 2 * (3 * 2 * T * h * f) + 2 * T * h * 4;
  EXPECT_LT(rel_diff(t.layer_forward_flops(int64_t(T), int64_t(sq)), expected), 1e-12);
}

TEST(Moe, AllToAllAndTensorParallelTrafficPerLayer)
{
  auto s = tiny_moe();
  dtsim::model::Transformer t(s.model);
  dtsim::kernels::ComputeModel cm(s.hardware.device, s.training.precision);
  auto prog = dtsim::replay::build_step_program(s, derive_plan(s), t, cm);
  std::vector<double> a2a, tp;
  for (const auto& st : prog.forward[0][0]) {
    if (st.label.find("layer 1") == std::string::npos)
      continue;
    if (st.kind == Step::Kind::EpCollective)
      a2a.push_back(st.bytes);
    if (st.kind == Step::Kind::TpCollective)
      tp.push_back(st.bytes);
  }
  // Dispatch and combine: a rank's own 2048 / 2 = 1024 tokens, 2 copies each, 256 elements of 2 bytes.
  ASSERT_EQ(a2a.size(), 2u);
  EXPECT_DOUBLE_EQ(a2a[0], 1024.0 * 2 * 256 * 2);
  EXPECT_DOUBLE_EQ(a2a[1], 1024.0 * 2 * 256 * 2);
  // Attention: all-gather and reduce-scatter of 2048 x 256 x 2 B; experts: of all 2048 x 2 routed tokens.
  ASSERT_EQ(tp.size(), 4u);
  EXPECT_DOUBLE_EQ(tp[0], 2048.0 * 256 * 2);
  EXPECT_DOUBLE_EQ(tp[2], 2048.0 * 2 * 256 * 2);
  EXPECT_DOUBLE_EQ(tp[3], 2048.0 * 2 * 256 * 2);
  // Backward: the same two all-to-alls.
  int back = 0;
  for (const auto& st : prog.backward[0][0])
    back += st.kind == Step::Kind::EpCollective && st.label.find("layer 1") != std::string::npos;
  EXPECT_EQ(back, 2);
}

TEST(Moe, ExpertStatesShardOverTheirOwnDataParallelGroup)
{
  auto s = tiny_moe({"parallel.zero=1"});
  dtsim::model::Transformer t(s.model);
  auto r = dtsim::parallel::estimate_memory(s, derive_plan(s), t);
  const double experts = dtsim::parallel::stage_expert_params(t, derive_plan(s), 0);
  const double dense = r.stages[0].params - experts;
  EXPECT_DOUBLE_EQ(experts, 4 * 3.0 * 256 * 512 / 2);
  // ZeRO-1: 12 B of optimizer states per parameter; dense ones over dp = 8, expert ones over dp / ep = 2.
  EXPECT_DOUBLE_EQ(r.stages[0].optimizer_bytes, 12 * dense / 8 + 12 * experts / 2);
}

// ZeRO-3 gathers a layer's dense parameters over dp and its experts over the dp / ep ranks that hold them.
TEST(Moe, Zero3GathersExpertsOverTheirOwnGroup)
{
  auto s = tiny_moe({"parallel.zero=3"});
  dtsim::model::Transformer t(s.model);
  dtsim::kernels::ComputeModel cm(s.hardware.device, s.training.precision);
  auto prog = dtsim::replay::build_step_program(s, derive_plan(s), t, cm);
  std::vector<const Step*> gathers;
  for (const auto& st : prog.forward[0][0])
    if (st.kind == Step::Kind::ParamGather && st.label.find("layer 1") != std::string::npos)
      gathers.push_back(&st);
  ASSERT_EQ(gathers.size(), 2u);
  // dense: attention 262,144 / 2 + router 1,024 + norms 512; experts: one expert of 3 * 256 * 512 / 2; 2 B each.
  EXPECT_FALSE(gathers[0]->expert);
  EXPECT_DOUBLE_EQ(gathers[0]->bytes, 2.0 * (262144.0 / 2 + 1024 + 512));
  EXPECT_TRUE(gathers[1]->expert);
  EXPECT_DOUBLE_EQ(gathers[1]->bytes, 2.0 * 3 * 256 * 512 / 2);
}

nlohmann::json run_moe(const std::string& extra)
{
  return dtsim::test::run_json("scenarios/tiny-moe.yaml", extra);
}

// Expert all-to-alls inside a node (tp 2 x ep 4) and across nodes (tp 8: one data-parallel rank per node), with a
// pipeline, with ZeRO-2: folded and full fidelity agree.
TEST(Moe, FoldedAndFullFidelityAgree)
{
  if (dtsim::test::dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  for (const std::string& plan :
       {std::string(""), std::string(" --set devices=64 --set parallel.tp=8 --set parallel.zero=1"),
        std::string(" --set parallel.pp=2 --set parallel.dp=4 --set parallel.ep=2"),
        std::string(" --set parallel.zero=2 --set training.expert_imbalance=1.5"),
        std::string(" --set parallel.zero=3 --set parallel.pp=2 --set parallel.dp=4 --set parallel.ep=2")}) {
    auto folded = run_moe(plan), full = run_moe(plan + " --set simulation.fidelity=full");
    const double a = folded.at("step_time_s").get<double>(), b = full.at("step_time_s").get<double>();
    std::printf("[moe]%s folded %.12g s, full %.12g s, all-to-all %.6g s\n", plan.c_str(), a, b,
                folded.at("breakdown").at("exposed_ep_comm_s").get<double>());
    EXPECT_LT(rel_diff(a, b), 0.01);
    EXPECT_GT(folded.at("breakdown").at("exposed_ep_comm_s").get<double>(), 0.0);
  }
}

// Every rank is modelled as the busiest. With the busiest expert at 2x the mean and one expert per rank (4 experts,
// ep 4), the rank's expert GEMMs get twice the tokens and so do its all-to-alls: 1024 tokens x 2 copies x 2, 256
// elements of 2 bytes, the time of the busiest rank's receive (dispatch) and send (combine).
TEST(Moe, ImbalanceSlowsTheExpertsAndTheirAllToAlls)
{
  const auto a2a = layer1_forward_all_to_all_bytes(tiny_moe({"training.expert_imbalance=2"}));
  ASSERT_EQ(a2a.size(), 2u);
  for (double bytes : a2a)
    EXPECT_DOUBLE_EQ(bytes, 1024.0 * 2 * 2 * 256 * 2);
  if (dtsim::test::dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  auto even = run_moe(""), skewed = run_moe(" --set training.expert_imbalance=2");
  EXPECT_GT(skewed.at("breakdown").at("compute_s").get<double>(), even.at("breakdown").at("compute_s").get<double>());
  EXPECT_GT(skewed.at("breakdown").at("exposed_ep_comm_s").get<double>(),
            even.at("breakdown").at("exposed_ep_comm_s").get<double>());
}

// A capacity factor caps what the busiest expert takes (the rest is dropped before dispatch): the busiest expert at
// 2x the mean with a capacity of 1.5 moves and computes 1.5x the mean tokens; a capacity above the imbalance changes
// nothing.
TEST(Moe, CapacityFactorCapsTheBusiestExpert)
{
  auto a2a_bytes = [](std::vector<std::string> overrides) {
    const auto bytes = layer1_forward_all_to_all_bytes(tiny_moe(overrides));
    return bytes.empty() ? 0.0 : bytes.front();
  };
  EXPECT_DOUBLE_EQ(a2a_bytes({"training.expert_imbalance=2", "training.expert_capacity_factor=1.5"}),
                   1024.0 * 2 * 1.5 * 256 * 2);
  EXPECT_DOUBLE_EQ(a2a_bytes({"training.expert_imbalance=2", "training.expert_capacity_factor=3"}),
                   a2a_bytes({"training.expert_imbalance=2"}));
  auto capped = tiny_moe({"training.expert_imbalance=2", "training.expert_capacity_factor=1.5"});
  auto same = tiny_moe({"training.expert_imbalance=1.5"});
  dtsim::model::Transformer t(capped.model);
  EXPECT_DOUBLE_EQ(dtsim::parallel::estimate_memory(capped, derive_plan(capped), t).peak_bytes(),
                   dtsim::parallel::estimate_memory(same, derive_plan(same), t).peak_bytes());
}

// Context and expert parallelism together (Megatron-Core): the ep ranks are carved out of the dp * cp ranks, cp
// ranks first. tiny-moe with cp 2, dp 4 (16 GPUs, tp 2). ep 2: each expert-parallel group is one cp pair; ep 4: two
// cp pairs of two data-parallel replicas. Experts are then replicated over dp * cp / ep ranks, which share their
// ZeRO-1 optimizer states: with ep 2, 12 bytes per expert parameter over 4 ranks, per dense parameter over 8.
TEST(Moe, ContextAndExpertParallelismTogether)
{
  auto s = tiny_moe({"parallel.cp=2", "parallel.dp=4", "parallel.ep=2", "parallel.zero=1"});
  dtsim::model::Transformer t(s.model);
  auto r = dtsim::parallel::estimate_memory(s, derive_plan(s), t);
  const double experts = dtsim::parallel::stage_expert_params(t, derive_plan(s), 0);
  const double dense = r.stages[0].params - experts;
  EXPECT_DOUBLE_EQ(experts, 4 * 2 * 3.0 * 256 * 512 / 2);  // 4 layers, 2 experts per rank, halved by tp
  EXPECT_DOUBLE_EQ(r.stages[0].optimizer_bytes, 12 * dense / 8 + 12 * experts / 4);
  // The all-to-all moves the rank's own tokens: 2048 / cp / tp = 512 tokens, 2 copies, 256 elements of 2 bytes.
  const auto a2a = layer1_forward_all_to_all_bytes(s);
  ASSERT_EQ(a2a.size(), 2u);
  for (double bytes : a2a)
    EXPECT_DOUBLE_EQ(bytes, 512.0 * 2 * 256 * 2);
  if (dtsim::test::dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  for (const std::string& plan : {std::string(" --set parallel.cp=2 --set parallel.dp=4 --set parallel.ep=2"),
                                  std::string(" --set parallel.cp=2 --set parallel.dp=2 --set parallel.pp=2 "
                                              "--set parallel.ep=4 --set parallel.zero=1"),
                                  std::string(" --set parallel.cp=2 --set parallel.dp=4 --set parallel.ep=2 "
                                              "--set parallel.zero=3")}) {
    auto folded = run_moe(plan), full = run_moe(plan + " --set simulation.fidelity=full");
    const double a = folded.at("step_time_s").get<double>(), b = full.at("step_time_s").get<double>();
    std::printf("[moe cp]%s folded %.12g s, full %.12g s\n", plan.c_str(), a, b);
    EXPECT_LT(rel_diff(a, b), 0.01);
    EXPECT_GT(folded.at("breakdown").at("exposed_ep_comm_s").get<double>(), 0.0);
  }
}

}  // namespace
