// Collectives against the alpha-beta ring model (Thakur et al. 2005; NCCL): all-reduce 2(n-1)*alpha +
// 2(n-1)/n * S/beta, reduce-scatter and all-gather half of it; NCCL-style hierarchical all-reduce; and the
// tensor-parallel traffic of Megatron-LM (Narayanan et al. 2021, Sec. 3.2: 2 all-reduces forward and 2 backward
// of b*s*h elements per layer and microbatch).
#include <gtest/gtest.h>

#include <cstdio>
#include <set>

#include "app/simulate.hpp"
#include "collectives/collective.hpp"
#include "hardware/compute_model.hpp"
#include "model/transformer.hpp"
#include "parallel/placement.hpp"
#include "replay/step_program.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"

using dtsim::parallel::derive_plan;

namespace {

using dtsim::collectives::Kind;
using dtsim::collectives::plan_collective;
using dtsim::collectives::ring_time;
using dtsim::parallel::Placement;
using dtsim::test::rel_diff;
using dtsim::test::source_path;

constexpr double S = 64.0 * 1048576;  // tensor size in bytes

TEST(PlanCollective, RingAllReduceInOneNode)
{
  Placement pl(1, 8, 1, 8);  // dp 1, tp 8, pp 1, 8 devices per node
  auto group = pl.tp_group(0, 0);
  ASSERT_EQ(group.size(), 8u);
  auto phases = plan_collective(Kind::AllReduce, S, group, pl);
  ASSERT_EQ(phases.size(), 1u);
  const auto& ph = phases[0];
  EXPECT_FALSE(ph.inter_node);
  EXPECT_EQ(ph.steps, 2 * (8 - 1));
  ASSERT_EQ(ph.flows.size(), 8u);
  std::set<int64_t> srcs;
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(ph.flows[i].src, group[i]);
    EXPECT_EQ(ph.flows[i].dst, group[(i + 1) % 8]);  // ring edges
    EXPECT_DOUBLE_EQ(ph.flows[i].bytes, 2.0 * 7.0 / 8.0 * S);
    srcs.insert(ph.flows[i].src);
  }
  EXPECT_EQ(srcs.size(), 8u);
}

TEST(PlanCollective, RingReduceScatterAndAllGatherAreHalf)
{
  Placement pl(1, 8, 1, 8);
  for (Kind k : {Kind::ReduceScatter, Kind::AllGather}) {
    auto phases = plan_collective(k, S, pl.tp_group(0, 0), pl);
    ASSERT_EQ(phases.size(), 1u);
    EXPECT_EQ(phases[0].steps, 7);
    for (const auto& f : phases[0].flows)
      EXPECT_DOUBLE_EQ(f.bytes, 7.0 / 8.0 * S);
  }
}

TEST(PlanCollective, NothingForOneRankOrNoBytes)
{
  Placement pl(1, 8, 1, 8);
  EXPECT_TRUE(plan_collective(Kind::AllReduce, S, {3}, pl).empty());
  EXPECT_TRUE(plan_collective(Kind::AllReduce, 0, pl.tp_group(0, 0), pl).empty());
}

// A data-parallel group of 8 spread over 4 nodes, 2 members per node (dp 8, tp 4, 8 devices per node: the group
// of TP rank 0 is devices 0, 4, 8, ..., 28). NCCL-style: reduce-scatter inside each node, all-reduce of the
// S/2 shards across nodes (one ring per local rank), all-gather inside each node.
TEST(PlanCollective, HierarchicalAcrossFourNodes)
{
  Placement pl(8, 4, 1, 8);
  auto group = pl.dp_group(0, 0);
  ASSERT_EQ(group, (std::vector<int64_t>{0, 4, 8, 12, 16, 20, 24, 28}));
  auto phases = plan_collective(Kind::AllReduce, S, group, pl);
  ASSERT_EQ(phases.size(), 3u);
  // 1. reduce-scatter within each node: rings of 2, each member sends (2-1)/2 * S
  EXPECT_FALSE(phases[0].inter_node);
  EXPECT_EQ(phases[0].steps, 1);
  ASSERT_EQ(phases[0].flows.size(), 8u);
  for (const auto& f : phases[0].flows) {
    EXPECT_EQ(pl.node_of(f.src), pl.node_of(f.dst));
    EXPECT_NE(f.src, f.dst);
    EXPECT_DOUBLE_EQ(f.bytes, 0.5 * S);
  }
  // 2. all-reduce of S/2 across the 4 nodes: two rings of 4, each member sends 2*(4-1)/4 * S/2
  EXPECT_TRUE(phases[1].inter_node);
  EXPECT_EQ(phases[1].steps, 2 * (4 - 1));
  ASSERT_EQ(phases[1].flows.size(), 8u);
  for (const auto& f : phases[1].flows) {
    EXPECT_NE(pl.node_of(f.src), pl.node_of(f.dst));
    EXPECT_EQ(pl.node_of(f.dst), (pl.node_of(f.src) + 1) % 4);
    EXPECT_EQ((f.src % 8) / 4, (f.dst % 8) / 4) << "a ring joins the same local member of every node";
    EXPECT_DOUBLE_EQ(f.bytes, 2.0 * 3.0 / 4.0 * (S / 2));
  }
  // 3. all-gather within each node
  EXPECT_FALSE(phases[2].inter_node);
  EXPECT_EQ(phases[2].steps, 1);
  ASSERT_EQ(phases[2].flows.size(), 8u);
  for (const auto& f : phases[2].flows)
    EXPECT_DOUBLE_EQ(f.bytes, 0.5 * S);
}

// One member per node: a flat ring across the NICs.
TEST(PlanCollective, OneMemberPerNodeIsAFlatInterNodeRing)
{
  Placement pl(4, 8, 1, 8);
  auto phases = plan_collective(Kind::AllReduce, S, pl.dp_group(0, 0), pl);
  ASSERT_EQ(phases.size(), 1u);
  EXPECT_TRUE(phases[0].inter_node);
  EXPECT_EQ(phases[0].steps, 6);
  for (const auto& f : phases[0].flows)
    EXPECT_DOUBLE_EQ(f.bytes, 1.5 * S);
}

TEST(RingTime, AlphaBetaFormula)
{
  const double alpha = 2e-6, beta = 231e9;
  for (int64_t n : {2, 4, 8, 64}) {
    const double nd = double(n);
    EXPECT_DOUBLE_EQ(ring_time(Kind::AllReduce, S, n, alpha, beta), 2 * (nd - 1) * alpha + 2 * (nd - 1) / nd * S / beta);
    EXPECT_DOUBLE_EQ(ring_time(Kind::ReduceScatter, S, n, alpha, beta), (nd - 1) * alpha + (nd - 1) / nd * S / beta);
    EXPECT_DOUBLE_EQ(ring_time(Kind::AllGather, S, n, alpha, beta), (nd - 1) * alpha + (nd - 1) / nd * S / beta);
  }
  EXPECT_EQ(ring_time(Kind::AllReduce, S, 1, alpha, beta), 0.0);
}

// ---- end to end: tensor-parallel all-reduces on one node (one SimGrid engine per process) -----------------

// tests/unit/data/tp8.yaml: tiny GPT (l = 4, h = 256), tp 8, pp 1, dp 1, b = 4, s = 512, 2 microbatches, bf16.
constexpr double kL = 4, kH = 256, kB = 4, kSeq = 512, kMicrobatches = 2;

// Megatron-LM per microbatch: 2 + 2 all-reduces per layer, 1 after the vocabulary-parallel embedding lookup
// (forward), 1 for the gradient of the head's input (backward); each of b*s*h 16-bit elements.
constexpr double kAllReducesPerMicrobatch = 4 * kL + 2;
constexpr double kTensorBytes = kB * kSeq * kH * 2;

dtsim::scenario::ScenarioSpec tp8(const std::vector<std::string>& overrides)
{
  return dtsim::scenario::load_scenario(source_path("tests/unit/data/tp8.yaml"), overrides);
}

double expected_exposed_tp(const dtsim::scenario::ScenarioSpec& s)
{
  const auto& nvl = s.hardware.node.nvlink;
  return kMicrobatches * kAllReducesPerMicrobatch *
         ring_time(Kind::AllReduce, kTensorBytes, 8, nvl.latency_s, nvl.bw_Bps * nvl.efficiency);
}

// The step program carries exactly the hand-counted collectives (no engine needed).
TEST(TensorParallelTraffic, StepProgramCountsNarayananAllReduces)
{
  for (bool sp : {false, true}) {
    SCOPED_TRACE(sp ? "sp" : "no sp");
    auto s = tp8({sp ? "parallel.sp=true" : "parallel.sp=false"});
    ASSERT_EQ(double(s.microbatches), kMicrobatches);
    dtsim::model::Transformer t(s.model);
    dtsim::hardware::ComputeModel cm(s.hardware.device, s.training.precision);
    auto prog = dtsim::replay::build_step_program(s, derive_plan(s), t, cm);
    int all_reduce = 0, reduce_scatter = 0, all_gather = 0;
    for (const auto* pass : {&prog.forward[0][0], &prog.backward[0][0]})
      for (const auto& st : *pass) {
        if (st.kind != dtsim::replay::Step::Kind::TpCollective)
          continue;
        EXPECT_DOUBLE_EQ(st.bytes, kTensorBytes);
        all_reduce += st.collective == dtsim::model::TpCollective::AllReduce;
        reduce_scatter += st.collective == dtsim::model::TpCollective::ReduceScatter;
        all_gather += st.collective == dtsim::model::TpCollective::AllGather;
      }
    if (!sp) {
      EXPECT_EQ(all_reduce, int(kAllReducesPerMicrobatch));
      EXPECT_EQ(reduce_scatter + all_gather, 0);
    } else {  // each all-reduce becomes a reduce-scatter plus an all-gather
      EXPECT_EQ(all_reduce, 0);
      EXPECT_EQ(reduce_scatter, int(kAllReducesPerMicrobatch));
      EXPECT_EQ(all_gather, int(kAllReducesPerMicrobatch));
    }
  }
}

void check_exposed_tp(const std::vector<std::string>& overrides)
{
  auto s = tp8(overrides);
  auto r = dtsim::app::simulate(s, false);
  ASSERT_TRUE(r.simulated);
  const auto& b = r.replay.average;
  const double expected = expected_exposed_tp(s);
  std::printf("[tp comm] %s: exposed TP %.9g s, expected %.9g s (%.0f all-reduces of %.0f B, %.4g us each)\n",
              dtsim::scenario::to_string(s.fidelity), b.exposed_tp_comm_s, expected,
              kMicrobatches * kAllReducesPerMicrobatch, kTensorBytes,
              1e6 * expected / (kMicrobatches * kAllReducesPerMicrobatch));
  EXPECT_LT(rel_diff(b.exposed_tp_comm_s, expected), 0.01) << b.exposed_tp_comm_s << " vs " << expected;
  EXPECT_EQ(b.exposed_pp_comm_s, 0.0);
  EXPECT_EQ(b.exposed_dp_comm_s, 0.0);
}

TEST(TensorParallelTiming, FoldedMatchesRingTime) { check_exposed_tp({}); }
TEST(TensorParallelTiming, FullFidelityMatchesRingTime) { check_exposed_tp({"simulation.fidelity=full"}); }
// Reduce-scatter + all-gather cost what the all-reduce costs in the alpha-beta model.
TEST(TensorParallelTiming, SequenceParallelMatchesRingTime) { check_exposed_tp({"parallel.sp=true"}); }

}  // namespace

// ---- end to end: the data-parallel gradient all-reduce (dp_overlap off: one all-reduce after backward) -------

// tests/unit/data/dp8.yaml: tiny GPT, dp 8, tp 1, pp 1. Gradients: every parameter in 16 bits (no software stack,
// whose fp32 main gradients would double the bytes). tiny-gpt by hand
// (learned positions at s = 512, tied embeddings): 12*l*h^2 + 13*l*h + (V + s)*h + 2h (final norm) = 3,552,768.
constexpr double kTinyParams = 12 * kL * kH * kH + 13 * kL * kH + (1024 + 512) * kH + 2 * kH;
constexpr double kGradBytes = 2 * kTinyParams;

TEST(DataParallelTiming, FlatRingInOneNode)
{
  static_assert(kTinyParams == 3552768.0, "tiny-gpt.yaml states 3,552,768 parameters");
  auto s = dtsim::scenario::load_scenario(source_path("tests/unit/data/dp8.yaml"), {"stack=none"});
  auto r = dtsim::app::simulate(s, false);
  ASSERT_TRUE(r.simulated);
  const auto& nvl = s.hardware.node.nvlink;
  const double expected = ring_time(Kind::AllReduce, kGradBytes, 8, nvl.latency_s, nvl.effective_bw_Bps());
  const auto& b = r.replay.average;
  std::printf("[dp comm] one node: exposed DP %.9g s, expected %.9g s\n", b.exposed_dp_comm_s, expected);
  EXPECT_LT(rel_diff(b.exposed_dp_comm_s, expected), 0.01);
  EXPECT_EQ(b.exposed_tp_comm_s, 0.0);
}

// dp 16 over two nodes of 8: reduce-scatter in each node (NVLink), all-reduce of S/8 between the two nodes (one
// ring per local rank, each on its own NIC), all-gather in each node.
TEST(DataParallelTiming, HierarchicalAcrossTwoNodes)
{
  auto s = dtsim::scenario::load_scenario(source_path("tests/unit/data/dp8.yaml"),
                                          {"devices=16", "parallel.dp=16", "training.global_batch=64", "stack=none"});
  auto r = dtsim::app::simulate(s, false);
  ASSERT_TRUE(r.simulated);
  const auto& nvl = s.hardware.node.nvlink;
  const auto& nic = s.hardware.network.nic;
  const double expected =
      ring_time(Kind::ReduceScatter, kGradBytes, 8, nvl.latency_s, nvl.effective_bw_Bps()) +
      ring_time(Kind::AllReduce, kGradBytes / 8, 2, nic.latency_s, nic.effective_bw_Bps()) +
      ring_time(Kind::AllGather, kGradBytes, 8, nvl.latency_s, nvl.effective_bw_Bps());
  const auto& b = r.replay.average;
  std::printf("[dp comm] two nodes: exposed DP %.9g s, expected %.9g s\n", b.exposed_dp_comm_s, expected);
  EXPECT_LT(rel_diff(b.exposed_dp_comm_s, expected), 0.01);
}

// tp 8 x dp 2 on two nodes: eight data-parallel groups {r, 8 + r}, one member per node, each a two-rank ring on
// its own NIC pair (rail-optimized, one NIC per GPU). Each TP rank all-reduces its own shard of the gradients:
// per rank, by hand (Megatron-LM: matrices and their biases split 8 ways; layer norms, the attention-output and
// fc2 biases, and the position table replicated): l * ((12h^2 + 7h)/8 + 6h) + V*h/8 + s*h + 2h = 564,608.
constexpr double kTinyParamsPerTp8Rank =
    kL * ((12 * kH * kH + 7 * kH) / 8 + 6 * kH) + 1024 * kH / 8 + 512 * kH + 2 * kH;

void check_dp_with_tp(const std::vector<std::string>& extra)
{
  static_assert(kTinyParamsPerTp8Rank == 564608.0, "hand count");
  std::vector<std::string> o = {"devices=16", "parallel.dp=2", "parallel.dp_overlap=false",
                                "training.global_batch=16", "stack=none"};
  o.insert(o.end(), extra.begin(), extra.end());
  auto s = tp8(o);
  auto r = dtsim::app::simulate(s, false);
  ASSERT_TRUE(r.simulated);
  const auto& nic = s.hardware.network.nic;
  const double expected = ring_time(Kind::AllReduce, 2 * kTinyParamsPerTp8Rank, 2, nic.latency_s,
                                    nic.effective_bw_Bps());
  const auto& b = r.replay.average;
  std::printf("[dp comm] tp 8 x dp 2 (%s): exposed DP %.9g s, expected %.9g s; exposed TP %.9g s, expected %.9g s\n",
              dtsim::scenario::to_string(s.fidelity), b.exposed_dp_comm_s, expected, b.exposed_tp_comm_s,
              expected_exposed_tp(s));
  EXPECT_LT(rel_diff(b.exposed_dp_comm_s, expected), 0.01);
  EXPECT_LT(rel_diff(b.exposed_tp_comm_s, expected_exposed_tp(s)), 0.01);  // TP traffic is unchanged by dp
}

TEST(DataParallelTiming, TensorParallelShardsFolded) { check_dp_with_tp({}); }
TEST(DataParallelTiming, TensorParallelShardsFull) { check_dp_with_tp({"simulation.fidelity=full"}); }
