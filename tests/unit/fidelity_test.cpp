// Folded fidelity (the default: one simulated device per pipeline stage) against the full simulation of every
// device, on small plans that cover what folding has to get right: 1F1B, interleaved and GPipe schedules,
// data-parallel rings inside a node, across nodes and hierarchical, tensor-parallel collectives as flows and in
// closed form, overlapped pipeline transfers, gradients all-reduced after backward. Issue 6 bounds the error at 1%;
// each case prints the error it measured (docs/performance.md quotes them).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "run_json.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::test::dtsim_binary;
using dtsim::test::rel_diff;

struct FidelityCase {
  const char* name;
  const char* sets;  // --set overrides of scenarios/tiny.yaml (16 A100, tp 2, pp 4, 1F1B, global batch 64, mb 4)
};

class FoldedVsFull : public ::testing::TestWithParam<FidelityCase> {};

nlohmann::json run_json(const std::string& sets)
{
  return dtsim::test::run_json("scenarios/tiny.yaml", " " + sets);
}

TEST_P(FoldedVsFull, StepTimeWithinOnePercent)
{
  if (dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  const FidelityCase c = GetParam();
  auto folded = run_json(c.sets);
  auto full = run_json(std::string(c.sets) + " --set simulation.fidelity=full");
  ASSERT_EQ(folded.at("plan").at("fidelity"), "folded");
  ASSERT_EQ(full.at("plan").at("fidelity"), "full");
  // Folding must actually fold: fewer devices simulated than the full run.
  ASSERT_LT(folded.at("simulation").at("simulated_devices").get<int64_t>(),
            full.at("simulation").at("simulated_devices").get<int64_t>());
  const double a = folded.at("step_time_s").get<double>(), b = full.at("step_time_s").get<double>();
  std::printf("[fidelity] %-34s folded %.9g s, full %.9g s, error %.2e\n", c.name, a, b, rel_diff(a, b));
  EXPECT_LT(rel_diff(a, b), 0.01) << c.name << ": folded " << a << " s, full " << b << " s";
}

INSTANTIATE_TEST_SUITE_P(
    SmallPlans, FoldedVsFull,
    ::testing::Values(
        FidelityCase{"1f1b_tp2_pp4_dp2", ""},
        FidelityCase{"gpipe_tp2_pp4_dp2", "--set schedule=gpipe"},
        FidelityCase{"1f1b_pp_overlap", "--set parallel.pp_overlap=true"},
        FidelityCase{"interleaved_tp2_pp2_dp4",
                     "--set parallel.pp=2 --set parallel.dp=4 --set schedule=interleaved-1f1b --set parallel.vpp=2"},
        // One node per replica: the data-parallel ring runs across nodes only.
        FidelityCase{"dp_across_nodes_tp8_dp4",
                     "--set devices=32 --set parallel.tp=8 --set parallel.pp=1 --set parallel.dp=4"},
        FidelityCase{"dp_across_nodes_after_backward",
                     "--set devices=32 --set parallel.tp=8 --set parallel.pp=1 --set parallel.dp=4 "
                     "--set parallel.dp_overlap=false"},
        // Data-parallel groups spanning two nodes with several members each: hierarchical all-reduce.
        FidelityCase{"dp_hierarchical_tp2_pp2_dp8",
                     "--set devices=32 --set parallel.tp=2 --set parallel.pp=2 --set parallel.dp=8"},
        // tp 8 in a node, stages and replicas in other nodes: folded times the TP collectives in closed form.
        // The first of each stage's two layers recomputed (training.recompute_layers).
        FidelityCase{"partial_recompute_tp2_pp2_dp4",
                     "--set parallel.pp=2 --set parallel.dp=4 --set training.recompute=full "
                     "--set training.recompute_layers=1"},
        FidelityCase{"interleaved_closed_form_tp8_pp2",
                     "--set devices=32 --set parallel.tp=8 --set parallel.pp=2 --set parallel.dp=2 "
                     "--set schedule=interleaved-1f1b --set parallel.vpp=2"},
        // A colliding fabric: leaves of two NICs (radix 4) hashed by static ECMP, so that the data-parallel flows
        // that leave a leaf run at its busiest uplink's rate (parallel/fabric_routes.hpp), and cross three switches.
        FidelityCase{"static_ecmp_tp8_pp2_dp4",
                     "--set devices=64 --set parallel.tp=8 --set parallel.pp=2 --set parallel.dp=4 "
                     "--set hardware.network.topology.type=fat-tree --set hardware.network.topology.levels=2 "
                     "--set hardware.network.topology.switch_radix=4 "
                     "--set hardware.network.topology.routing=static-ecmp"},
        FidelityCase{"static_ecmp_hierarchical_tp2_pp2_dp8",
                     "--set devices=32 --set parallel.tp=2 --set parallel.pp=2 --set parallel.dp=8 "
                     "--set hardware.network.topology.type=fat-tree --set hardware.network.topology.levels=2 "
                     "--set hardware.network.topology.switch_radix=4 "
                     "--set hardware.network.topology.routing=static-ecmp"}),
    [](const ::testing::TestParamInfo<FidelityCase>& info) { return std::string(info.param.name); });

}  // namespace
