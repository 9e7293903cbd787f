// Context parallelism (ring attention) on scenarios/tiny.yaml (tiny-gpt: h 256, 8 heads, sequence 512, micro
// batch 4), against hand computations.
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

using dtsim::replay::Step;
using dtsim::test::rel_diff;
using dtsim::test::source_path;

using dtsim::test::tiny_scenario;

// Each rank holds half the tokens: every activation halves, the attention scores too (its 256 queries against
// all 512 keys), so one layer's activations are exactly half.
TEST(ContextParallel, ActivationsPerLayerHalveWithCp2)
{
  auto one = tiny_scenario({}), two = tiny_scenario({"devices=32", "parallel.cp=2"});
  ASSERT_EQ(two.parallel.dp, 2);
  EXPECT_DOUBLE_EQ(dtsim::parallel::layer_activation_bytes(two.model, derive_plan(two).shape, false),
                   dtsim::parallel::layer_activation_bytes(one.model, derive_plan(one).shape, false) / 2);
}

TEST(ContextParallel, AttentionShapesAndRingTraffic)
{
  auto s = tiny_scenario({"devices=32", "parallel.cp=2"});
  dtsim::model::Transformer t(s.model);
  dtsim::model::Shape shape{4, 512, 2, false, 2, 1, 1.0, 2};
  auto layer = t.layer(shape);
  bool found = false;
  for (const auto& seg : layer.forward)
    for (const auto& op : seg.ops)
      if (op.name == "attn_scores") {
        found = true;
        EXPECT_DOUBLE_EQ(op.m, 256);  // this rank's queries
        EXPECT_DOUBLE_EQ(op.n, 512);  // every key
        EXPECT_DOUBLE_EQ(op.batch, 4 * 8 / 2);
      }
  EXPECT_TRUE(found);
  dtsim::kernels::ComputeModel cm(s.hardware.device, s.training.precision);
  auto prog = dtsim::replay::build_step_program(s, derive_plan(s), t, cm);
  // Keys and values of the whole sequence on one TP rank: 2 B x 4 x 512 tokens x 2 x 256 / 2.
  const double kv = 2.0 * 4 * 512 * 2 * 256 / 2;
  int fwd = 0, bwd = 0;
  for (const auto& st : prog.forward[1][0])
    if (st.kind == Step::Kind::CpRing) {
      ++fwd;
      EXPECT_DOUBLE_EQ(st.bytes, kv);
      EXPECT_EQ(st.collective, dtsim::model::TpCollective::ContextGather);
    }
  for (const auto& st : prog.backward[1][0])
    if (st.kind == Step::Kind::CpRing) {
      ++bwd;
      EXPECT_EQ(st.collective, dtsim::model::TpCollective::ContextGatherReduce);
    }
  EXPECT_EQ(fwd, 1);  // stage 1 holds one layer
  EXPECT_EQ(bwd, 1);
  // Pipeline sends carry half the tokens.
  auto p1 = dtsim::replay::build_step_program(tiny_scenario({}), derive_plan(tiny_scenario({})), t, cm);
  EXPECT_DOUBLE_EQ(prog.send_bytes, p1.send_bytes / 2);
}

nlohmann::json run_tiny(const std::string& extra)
{
  return dtsim::test::run_json("scenarios/tiny.yaml", extra);
}

// Rings inside a node (tp 2, cp 2) and across nodes (tp 8, cp 4), with a pipeline, with ZeRO-1 over dp * cp and
// TP overlap: folded and full fidelity agree.
TEST(ContextParallel, FoldedAndFullFidelityAgree)
{
  if (dtsim::test::dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  for (const std::string& plan :
       {std::string(" --set devices=32 --set parallel.cp=2"),
        std::string(" --set devices=64 --set parallel.tp=8 --set parallel.pp=2 --set parallel.cp=4"),
        std::string(" --set devices=64 --set parallel.tp=8 --set parallel.pp=2 --set parallel.cp=4"
                    " --set parallel.zero=1 --set parallel.sp=true --set parallel.tp_overlap=true")}) {
    auto folded = run_tiny(plan), full = run_tiny(plan + " --set simulation.fidelity=full");
    const double a = folded.at("step_time_s").get<double>(), b = full.at("step_time_s").get<double>();
    std::printf("[cp]%s folded %.12g s, full %.12g s, exposed ring %.6g s\n", plan.c_str(), a, b,
                folded.at("breakdown").at("exposed_cp_comm_s").get<double>());
    EXPECT_LT(rel_diff(a, b), 0.01);
  }
}

// Splitting the sequence halves the FLOPs per device (same global batch, twice the devices); the smaller GEMMs
// run less efficiently, so the compute time falls, but never below half.
TEST(ContextParallel, Cp2HalvesFlopsPerDevice)
{
  if (dtsim::test::dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  auto one = run_tiny(""), two = run_tiny(" --set devices=32 --set parallel.cp=2");
  const double c1 = one.at("breakdown").at("compute_s").get<double>();
  const double c2 = two.at("breakdown").at("compute_s").get<double>();
  std::printf("[cp] compute per device %.6g s -> %.6g s\n", c1, c2);
  EXPECT_LT(c2, c1);
  EXPECT_GE(c2, 0.5 * c1);
  EXPECT_LT(rel_diff(two.at("model_tflops_per_device").get<double>() * two.at("step_time_s").get<double>(),
                     one.at("model_tflops_per_device").get<double>() * one.at("step_time_s").get<double>() / 2),
            1e-9);
}

}  // namespace
