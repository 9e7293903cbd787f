// Expert tensor parallelism 1 (parallel.expert_tp; Megatron-Core's --expert-tensor-parallel-size 1): each expert
// whole on every TP rank, the expert-parallel group taken from the stage's ranks TP ranks first, no tensor-parallel
// collective around the experts. tiny-moe: hidden 256, 4 gated experts of width 512, 2 per token; tp 2, ep 4 on 16
// A100 (dp 8).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/compute_model.hpp"
#include "parallel/placement.hpp"
#include "parallel/plan.hpp"
#include "replay/step_program.hpp"
#include "run_json.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::replay::Step;
using dtsim::test::dtsim_binary;
using dtsim::test::rel_diff;

dtsim::scenario::ScenarioSpec tiny_moe_for_expert_tp(std::vector<std::string> overrides = {})
{
  return dtsim::scenario::load_scenario(dtsim::test::source_path("scenarios/tiny-moe.yaml"), overrides);
}

TEST(ExpertTp, ParametersByHand)
{
  auto s = tiny_moe_for_expert_tp();
  dtsim::model::Transformer t(s.model);
  // One expert per rank (ep 4): 3 * h * ffn whole, against half of it split over tp 2.
  EXPECT_DOUBLE_EQ(t.layer_expert_params_per_rank(1, 4), 3.0 * 256 * 512);
  EXPECT_DOUBLE_EQ(t.layer_expert_params_per_rank(2, 4), 3.0 * 256 * 512 / 2);
  // Attention still split over tp 2; router and norms whole.
  EXPECT_DOUBLE_EQ(t.layer_params_per_rank(2, 4, false, 1), 262144.0 / 2 + 3.0 * 256 * 512 + 1024 + 512);
  // The ranks holding the same expert: tp * dp / ep = 2 * 8 / 4 = 4, against dp / ep = 2.
  EXPECT_EQ(dtsim::parallel::derive_plan(tiny_moe_for_expert_tp({"parallel.expert_tp=1"})).groups.expert_dp, 4);
  EXPECT_EQ(dtsim::parallel::derive_plan(tiny_moe_for_expert_tp()).groups.expert_dp, 2);
}

// Flat index within a stage dp * tp + tp: ep consecutive ones form a group, every ep-th hold the same experts.
TEST(ExpertTp, GroupsTakeTpRanksFirst)
{
  dtsim::parallel::Placement p(8, 2, 1, 8);  // dp 8, tp 2, one stage, nodes of 8
  EXPECT_EQ(p.expert_group_across_tp(0, 1, 1, 4), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(p.expert_group_across_tp(0, 2, 0, 4), (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(p.expert_dp_group_across_tp(0, 1, 1, 4), (std::vector<int64_t>{3, 7, 11, 15}));
  // Without it: ep data-parallel ranks of one TP rank.
  EXPECT_EQ(p.rank_group(0, 1, 1, 4), (std::vector<int64_t>{1, 3, 5, 7}));
}

// Per layer and microbatch: the same all-to-all bytes (each rank dispatches its own sequence-parallel tokens, top-2
// copies), the same FLOPs, and two tensor-parallel collectives fewer (the all-gather and reduce-scatter of the routed
// tokens around the experts), in forward as in backward.
TEST(ExpertTp, ProgramByHand)
{
  auto count = [](const dtsim::scenario::ScenarioSpec& s) {
    dtsim::model::Transformer t(s.model);
    dtsim::kernels::ComputeModel cm(s.hardware.device, s.training.precision);
    auto prog = dtsim::replay::build_step_program(s, dtsim::parallel::derive_plan(s), t, cm);
    struct Counts {
      int tp = 0, ep = 0;
      double ep_bytes = 0, flops = 0;
    } c;
    for (const auto* pass : {&prog.forward[0][0], &prog.backward[0][0]})
      for (const auto& st : *pass) {
        if (st.label.find("layer 1") == std::string::npos)
          continue;
        c.tp += st.kind == Step::Kind::TpCollective;
        c.ep += st.kind == Step::Kind::EpCollective;
        c.ep_bytes += st.kind == Step::Kind::EpCollective ? st.bytes : 0.0;
        c.flops += st.kind == Step::Kind::Compute ? st.flops : 0.0;
      }
    return c;
  };
  const auto split = count(tiny_moe_for_expert_tp()), whole = count(tiny_moe_for_expert_tp({"parallel.expert_tp=1"}));
  std::printf("[expert_tp] layer 1: TP collectives %d -> %d, all-to-alls %d -> %d\n", split.tp, whole.tp, split.ep,
              whole.ep);
  EXPECT_EQ(whole.tp, split.tp - 4);
  EXPECT_EQ(whole.ep, split.ep);
  EXPECT_GT(whole.ep, 0);
  EXPECT_DOUBLE_EQ(whole.ep_bytes, split.ep_bytes);
  EXPECT_LT(rel_diff(whole.flops, split.flops), 1e-12);
}

// The expert groups span the TP ranks and, on nodes of 2 GPUs, the nodes: the folded replay equals the replay of every
// device (3e-16 on each fabric when written); and the plans that cannot run this way are refused.
TEST(ExpertTp, FoldedEqualsFullAndBadPlansRefused)
{
  if (dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  // Nodes of 8 (each group in one node); of 2 GPUs (groups over 2 nodes); of 2 GPUs with one NIC each on a fat tree
  // of 4-port switches with 4:1 uplinks (the other groups' flows share the representative's links).
  const std::string small = " --set hardware.node.devices=2 --set hardware.network.nics_per_node=";
  for (const std::string& more :
       {std::string(), small + "2",
        small + "1 --set hardware.network.topology.type=fat-tree --set hardware.network.topology.levels=2"
                " --set hardware.network.topology.switch_radix=4 --set hardware.network.topology.oversubscription=4"}) {
    const std::string sets = " --set parallel.expert_tp=1" + more;
    auto folded = dtsim::test::run_json("scenarios/tiny-moe.yaml", sets);
    auto full = dtsim::test::run_json("scenarios/tiny-moe.yaml", sets + " --set simulation.fidelity=full");
    const double a = folded.at("step_time_s"), b = full.at("step_time_s");
    std::printf("[expert_tp]%s folded %.12g s, full %.12g s\n", more.c_str(), a, b);
    EXPECT_LT(rel_diff(a, b), 1e-9) << more;
    EXPECT_EQ(folded.at("plan").at("expert_tp"), 1);
  }
  // Refused, naming the key at fault (the messages themselves: tests/config_errors/scenario-expert-tp-*.yaml).
  const std::pair<const char*, const char*> bad[] = {
      {" --set parallel.expert_tp=3", "error: parallel.expert_tp: expected 1 (experts whole on every rank) or tp"},
      {" --set parallel.expert_tp=1 --set parallel.sp=false", "error: parallel.sp: expected true"},
      {" --set parallel.expert_tp=1 --set parallel.tp=4 --set parallel.ep=2",
       "error: parallel.expert_tp: expert_tp 1 with tp 4 needs an ep that is a multiple of tp"}};
  for (const auto& [sets, message] : bad) {
    auto r = dtsim::test::run_capture("'" + dtsim_binary() + "' validate '" +
                                      dtsim::test::source_path("scenarios/tiny-moe.yaml") + "'" + sets + " 2>&1");
    EXPECT_EQ(r.rc, 2) << sets;
    EXPECT_NE(r.out.find(message), std::string::npos) << r.out;
  }
}

}  // namespace
