// PyTorch's async tensor parallelism (stack kernels.tp_overlap: torch-micro-pipeline, torchtitan) against Transformer
// Engine's userbuffers and no overlap, on tiny-gpt (h 256, 8 heads, ffn 1024, sequence 512, micro batch 4) at tp 8.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/micro_pipeline_tp.hpp"
#include "model/transformer.hpp"
#include "run_json.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::model::Op;
using dtsim::model::Segment;
using dtsim::model::TpCollective;
using dtsim::test::rel_diff;
using dtsim::test::source_path;

dtsim::model::Shape tp8_shape(bool overlap, bool micro_pipeline)
{
  dtsim::model::Shape shape{4, 512, 8, true, 2};
  shape.tp_comm_overlap = overlap;
  shape.tp_micro_pipeline = micro_pipeline;
  return shape;
}

dtsim::model::Transformer tiny_micro_pipeline_model()
{
  return dtsim::model::Transformer(
      dtsim::scenario::load_scenario(source_path("scenarios/tiny.yaml"), {"devices=16", "parallel.tp=8",
                                                                          "parallel.pp=2", "parallel.sp=true"})
          .model);
}

double pass_gemm_flops(const std::vector<Segment>& pass)
{
  double f = 0;
  for (const auto& seg : pass)
    for (const Op& op : seg.ops)
      f += op.flops();
  return f;
}

double bytes_of(const std::vector<Segment>& pass, const std::string& suffix)
{
  double b = 0;
  for (const auto& seg : pass)
    for (const Op& op : seg.ops)
      if (op.name.size() >= suffix.size() &&
          op.name.compare(op.name.size() - suffix.size(), suffix.size(), suffix) == 0)
        b += op.bytes;
  return b;
}

struct Collectives {
  int fused_gathers = 0, fused_scatters = 0, plain = 0, nccl_beside = 0;
};

Collectives collectives_in(const std::vector<Segment>& pass)
{
  Collectives c;
  for (size_t i = 0; i < pass.size(); ++i) {
    const Segment& seg = pass[i];
    if (!seg.is_collective() || (seg.collective != TpCollective::AllGather &&
                                 seg.collective != TpCollective::ReduceScatter))
      continue;
    if (seg.copy_engine) {
      EXPECT_TRUE(seg.beside_next);
      // The fused collective holds one GEMM: the (tp - 1) / tp of its rows the chunks after the first compute.
      EXPECT_EQ(pass[i + 1].ops.size(), 1u);
      EXPECT_EQ(pass[i + 1].ops[0].kind, Op::Kind::Gemm);
      (seg.collective == TpCollective::AllGather ? c.fused_gathers : c.fused_scatters)++;
    } else if (seg.beside_next) {
      ++c.nccl_beside;
    } else {
      ++c.plain;
    }
  }
  return c;
}

// Forward: both gathers (before QKV and fc1) and both reduce-scatters (after the projection and fc2) fused, each
// with its GEMM alone; backward: the two gathers of the row-parallel layers' output gradients fused, the two
// reduce-scatters of summed input gradients left as without tp_overlap (beside the weight gradients, NCCL's).
TEST(MicroPipelineTp, FusesWhatInductorsPassMatches)
{
  const auto t = tiny_micro_pipeline_model();
  const auto layer = t.layer(tp8_shape(true, true));
  const auto fwd = collectives_in(layer.forward), bwd = collectives_in(layer.backward);
  EXPECT_EQ(fwd.fused_gathers, 2);
  EXPECT_EQ(fwd.fused_scatters, 2);
  EXPECT_EQ(fwd.plain, 0);
  EXPECT_EQ(bwd.fused_gathers, 2);
  EXPECT_EQ(bwd.fused_scatters, 0);
  EXPECT_EQ(bwd.nccl_beside, 4);  // as without overlap: two column-parallel layers, a gather and a reduce-scatter each
  const auto off = collectives_in(t.layer(tp8_shape(false, false)).backward);
  EXPECT_EQ(off.nccl_beside, bwd.nccl_beside);
  // Userbuffers' model names nothing beside: the replay groups every collective with the kernels next to it.
  const auto ub = collectives_in(t.layer(tp8_shape(true, false)).forward);
  EXPECT_EQ(ub.fused_gathers + ub.fused_scatters + ub.nccl_beside, 0);
}

// The chunks do the GEMMs' work, no more; the shard copies move 2 x the shard, the reductions read every rank's
// partial of the rank's rows and write the sum.
TEST(MicroPipelineTp, ChunksKeepTheWorkAndTheCopiesHaveTheirBytes)
{
  const auto t = tiny_micro_pipeline_model();
  const auto plain = t.layer(tp8_shape(false, false)), fused = t.layer(tp8_shape(true, true));
  EXPECT_LT(rel_diff(pass_gemm_flops(fused.forward), pass_gemm_flops(plain.forward)), 1e-12);
  EXPECT_LT(rel_diff(pass_gemm_flops(fused.backward), pass_gemm_flops(plain.backward)), 1e-12);
  const double boundary = 2.0 * 4 * 512 * 256;  // the layer's 16-bit activation, all 8 ranks' rows
  EXPECT_DOUBLE_EQ(bytes_of(fused.forward, ".symm_copy"), 2 * (2 * boundary / 8));
  EXPECT_DOUBLE_EQ(bytes_of(fused.forward, ".reduce_partials"), 2 * boundary * (1 + 1.0 / 8));
  EXPECT_DOUBLE_EQ(bytes_of(fused.backward, ".symm_copy"), 2 * (2 * boundary / 8));
  EXPECT_DOUBLE_EQ(bytes_of(fused.backward, ".reduce_partials"), 0);
}

// One chunk of each fused GEMM stays outside the overlap, the gather's last, the reduce-scatter's first:
// max(C, G (tp - 1) / tp) + G / tp for each.
TEST(MicroPipelineTp, OneChunkOfEachGemmIsNotOverlapped)
{
  std::vector<Segment> pass;
  Op fc1;
  fc1.name = "fc1";
  fc1.kind = Op::Kind::Gemm;
  fc1.linear = true;
  fc1.m = 800;
  fc1.n = fc1.k = 64;
  Op fc2 = fc1;
  fc2.name = "fc2";
  pass.push_back(Segment{{}, TpCollective::AllGather, 1000});
  pass.push_back(Segment{{fc1, fc2}, TpCollective::None, 0});
  pass.push_back(Segment{{}, TpCollective::ReduceScatter, 2000});
  dtsim::model::fuse_micro_pipeline_tp(pass, 4, true);
  // copy | gather beside 3/4 of fc1 | fc1's last quarter, fc2's first | reduce-scatter beside 3/4 of fc2 | reduction
  ASSERT_EQ(pass.size(), 7u);
  EXPECT_EQ(pass[0].ops[0].name, "fc1.symm_copy");
  EXPECT_DOUBLE_EQ(pass[0].ops[0].bytes, 2 * 1000 / 4.0);
  EXPECT_TRUE(pass[1].copy_engine);
  EXPECT_EQ(pass[1].collective, TpCollective::AllGather);
  EXPECT_DOUBLE_EQ(pass[2].ops[0].m, 600);
  ASSERT_EQ(pass[3].ops.size(), 2u);
  EXPECT_EQ(pass[3].ops[0].name, "fc1.last_chunk");
  EXPECT_DOUBLE_EQ(pass[3].ops[0].m, 200);
  EXPECT_EQ(pass[3].ops[1].name, "fc2.first_chunk");
  EXPECT_DOUBLE_EQ(pass[3].ops[1].m, 200);
  EXPECT_TRUE(pass[4].copy_engine);
  EXPECT_EQ(pass[4].collective, TpCollective::ReduceScatter);
  EXPECT_DOUBLE_EQ(pass[5].ops[0].m, 600);
  EXPECT_EQ(pass[6].ops[0].name, "fc2.reduce_partials");
  EXPECT_DOUBLE_EQ(pass[6].ops[0].bytes, 2000 * 1.25);
  // In backward a reduce-scatter is left alone (its input is a sum of input gradients).
  std::vector<Segment> backward{Segment{{fc1}, TpCollective::None, 0}, Segment{{}, TpCollective::ReduceScatter, 2000}};
  dtsim::model::fuse_micro_pipeline_tp(backward, 4, false);
  ASSERT_EQ(backward.size(), 2u);
  EXPECT_FALSE(backward[1].copy_engine);
}

// Llama 3 8B on one 8-GPU A100 node at tp 8 (sequence 4,096, one sequence per microbatch): large enough tensors for
// the overlap to pay (tiny-gpt's h 256 layers lose more to the copies and reductions than the overlap hides).
nlohmann::json run_micro_pipeline(const std::string& extra)
{
  return dtsim::test::run_json("scenarios/tiny.yaml",
                               " --set devices=8 --set parallel.tp=8 --set parallel.pp=1 --set parallel.dp=1 "
                               "--set parallel.sp=true --set model=../models/llama3-8b.yaml "
                               "--set training.seq_len=4096 --set training.global_batch=4 "
                               "--set training.micro_batch=1" + extra);
}

// On one stage, no data parallelism, both overlaps beat none. Which of the two is faster is no fact of either code:
// with userbuffers' bulk re-gather priced (16 SMs beside the input-gradient GEMM, as the micro-pipeline's unmatched
// backward gathers take) they are within 0.2% here (0.7515 s userbuffers, 0.7502 s micro-pipeline, 0.8551 s none).
TEST(MicroPipelineTp, BothOverlapsBeatNoOverlapAndFullFidelityAgrees)
{
  if (dtsim::test::dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  const auto off = run_micro_pipeline(""), ub = run_micro_pipeline(" --set parallel.tp_overlap=true");
  const auto torch = run_micro_pipeline(" --set parallel.tp_overlap=true --set stack=" +
                                        source_path("tests/unit/data/stack-torch-micro-pipeline.yaml"));
  const auto full = run_micro_pipeline(" --set parallel.tp_overlap=true --set simulation.fidelity=full --set stack=" +
                                       source_path("tests/unit/data/stack-torch-micro-pipeline.yaml"));
  const double o = off.at("step_time_s").get<double>(), u = ub.at("step_time_s").get<double>();
  const double m = torch.at("step_time_s").get<double>();
  std::printf("[micro-pipeline tp] none %.6g s, userbuffers %.6g s, torch %.6g s, full fidelity %.6g s\n", o, u, m,
              full.at("step_time_s").get<double>());
  EXPECT_LT(m, o);
  EXPECT_LT(u, o);
  EXPECT_LT(rel_diff(m, full.at("step_time_s").get<double>()), 0.01);
}

}  // namespace
