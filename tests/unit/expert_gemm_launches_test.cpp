// The local experts' GEMMs are one batched GEMM on the device side but one host launch per expert (Transformer
// Engine's GroupedLinear as a loop of cuBLASLt calls): Op::expert_gemms counts them and the stack's host.expert_gemm
// prices each, CUDA graphs or not. tiny-moe: 4 experts over ep 4 (1 local expert); --set model.num_local_experts=16
// gives 4 local experts.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/compute_model.hpp"
#include "model/transformer.hpp"
#include "parallel/plan.hpp"
#include "scenario/scenario_spec.hpp"
#include "tiny_scenario.hpp"

namespace {

using dtsim::model::Op;
using dtsim::model::PassProgram;

struct Launches {
  double forward = 0, backward = 0;
  int ops_tagged = 0;
  bool only_expert_linear_gemms = true;
};

Launches expert_launches(const PassProgram& p)
{
  Launches l;
  auto scan = [&](const std::vector<dtsim::model::Segment>& pass, double& sum) {
    for (const auto& seg : pass)
      for (const Op& op : seg.ops) {
        if (op.expert_gemms == 0)
          continue;
        sum += op.expert_gemms;
        ++l.ops_tagged;
        const bool expert_linear = op.name.rfind("fc1", 0) == 0 || op.name.rfind("fc2", 0) == 0;
        l.only_expert_linear_gemms &= op.kind == Op::Kind::Gemm && op.linear && expert_linear;
      }
  };
  scan(p.forward, l.forward);
  scan(p.backward, l.backward);
  return l;
}

PassProgram layer(const dtsim::scenario::ScenarioSpec& s)
{
  dtsim::model::Transformer t(s.model);
  return t.layer(dtsim::parallel::derive_plan(s).shape);
}

// Gated experts: fc1 (gate and up) and fc2, each forward, input gradient and weight gradient: per local expert 2
// launches forward and 4 backward, on the expert linear GEMMs alone.
TEST(ExpertGemmLaunches, OnePerLocalExpertAndGemm)
{
  const auto s = dtsim::test::tiny_moe({"model.num_local_experts=16"});
  const Launches l = expert_launches(layer(s));
  EXPECT_DOUBLE_EQ(l.forward, 2 * 4);
  EXPECT_DOUBLE_EQ(l.backward, 4 * 4);
  EXPECT_EQ(l.ops_tagged, 6);
  EXPECT_TRUE(l.only_expert_linear_gemms);
}

// A dense layer's MLP is one GEMM per linear layer: nothing tagged.
TEST(ExpertGemmLaunches, DenseLayerHasNone)
{
  const Launches l = expert_launches(layer(dtsim::test::tiny_scenario({})));
  EXPECT_EQ(l.ops_tagged, 0);
}

// The run holding the expert GEMMs takes at least their host time, even under CUDA graphs; without the stack key
// (0) it is the GPU time as before; a GPU time above the host's stands.
TEST(ExpertGemmLaunches, HostFloorsTheExpertRunUnderGraphs)
{
  const auto s = dtsim::test::tiny_moe({"model.num_local_experts=16"});
  const PassProgram p = layer(s);
  const std::vector<Op>* experts = nullptr;
  for (const auto& seg : p.forward)
    for (const Op& op : seg.ops)
      if (op.expert_gemms > 0)
        experts = &seg.ops;
  ASSERT_NE(experts, nullptr);
  double launches = 0;
  for (const Op& op : *experts)
    launches += op.expert_gemms;
  ASSERT_DOUBLE_EQ(launches, 8);

  dtsim::stack::StackSpec st;
  st.cuda_graphs = true;
  st.host.launch_s = 1e-6;
  const dtsim::kernels::ComputeModel plain(s.hardware.device, s.training.precision);
  const double gpu = plain.run_seconds(*experts);
  st.host.expert_gemm_s = 0;
  EXPECT_DOUBLE_EQ(dtsim::kernels::ComputeModel(s.hardware.device, s.training.precision, st).run_seconds(*experts),
                   gpu);
  st.host.expert_gemm_s = gpu;  // 8 launches of the run's whole GPU time: the host bounds it
  EXPECT_DOUBLE_EQ(dtsim::kernels::ComputeModel(s.hardware.device, s.training.precision, st).run_seconds(*experts),
                   1e-6 + 8 * gpu);
  st.host.expert_gemm_s = gpu / 100;  // 8% of it: hidden behind the GPU
  EXPECT_DOUBLE_EQ(dtsim::kernels::ComputeModel(s.hardware.device, s.training.precision, st).run_seconds(*experts),
                   gpu);
}

}  // namespace
