// Transformer Engine userbuffers' bulk overlaps (ub_bulk_dgrad, ub_bulk_wgrad) in a column-parallel layer's backward:
// the saved, sharded input is all-gathered again beside the input-gradient GEMM, the input gradient reduce-scattered
// beside the weight-gradient GEMM, on tiny-gpt (h 256, ffn 1024, sequence 512, micro batch 4) at tp 8 with sp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/transformer.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::model::Segment;
using dtsim::model::TpCollective;

// The names of the kernels of the run each beside-next collective of `collective` holds.
std::vector<std::string> ubBulkBesideFirstKernels(const std::vector<Segment>& pass, TpCollective collective)
{
  std::vector<std::string> names;
  for (size_t i = 0; i + 1 < pass.size(); ++i)
    if (pass[i].collective == collective && pass[i].beside_next)
      names.push_back(pass[i + 1].ops.front().name);
  return names;
}

double ubBulkGatheredBytes(const std::vector<Segment>& pass)
{
  double bytes = 0;
  for (const auto& seg : pass)
    if (seg.collective == TpCollective::AllGather)
      bytes += seg.collective_bytes;
  return bytes;
}

}  // namespace

TEST(UbBulkDgrad, UserbuffersGathersTheColumnParallelInputAgainBesideItsInputGradient)
{
  const dtsim::model::Transformer model(
      dtsim::scenario::load_scenario(dtsim::test::source_path("scenarios/tiny.yaml"),
                                     {"devices=16", "parallel.tp=8", "parallel.pp=2", "parallel.sp=true"})
          .model);
  dtsim::model::Shape overlap{4, 512, 8, true, 2};
  overlap.tp_comm_overlap = true;
  dtsim::model::Shape plain{4, 512, 8, true, 2};
  const auto ub = model.layer(overlap, true);
  const auto nccl = model.layer(plain, true);

  // QKV's and fc1's saved inputs, each gathered beside its own input-gradient GEMM; each input gradient
  // reduce-scattered beside its own weight-gradient GEMM.
  const auto gathers = ubBulkBesideFirstKernels(ub.backward, TpCollective::AllGather);
  ASSERT_EQ(gathers.size(), 2u);
  EXPECT_EQ(gathers[0], "fc1.dgrad");
  EXPECT_EQ(gathers[1], "qkv.dgrad");
  const auto scatters = ubBulkBesideFirstKernels(ub.backward, TpCollective::ReduceScatter);
  ASSERT_EQ(scatters.size(), 2u);
  EXPECT_EQ(scatters[0], "fc1.wgrad");
  EXPECT_EQ(scatters[1], "qkv.wgrad");
  // Userbuffers moves the same backward bytes as NCCL's asynchronous path: the two re-gathers and the row-parallel
  // layers' output-gradient gathers.
  EXPECT_DOUBLE_EQ(ubBulkGatheredBytes(ub.backward), ubBulkGatheredBytes(nccl.backward));
}

// Transformer Engine 2.x's ring-exchange gathers copy the rank's rows into the userbuffer on the compute stream
// first (stack kernels.ub_gather_copy): one copy before each of QKV's and fc1's input gathers (forward) and the
// projection's and fc2's output-gradient gathers (backward), each reading and writing the rank's rows; none for the
// bulk re-gathers (copied on the communication stream) and none without the stack's word.
TEST(UbBulkDgrad, RingExchangeGathersCopyTheRanksRowsIntoTheBufferFirst)
{
  const dtsim::model::Transformer model(
      dtsim::scenario::load_scenario(dtsim::test::source_path("scenarios/tiny.yaml"),
                                     {"devices=16", "parallel.tp=8", "parallel.pp=2", "parallel.sp=true"})
          .model);
  dtsim::model::Shape shape{4, 512, 8, true, 2};
  shape.tp_comm_overlap = true;
  shape.ub_gather_copy = true;
  const auto copied = model.layer(shape, true);
  shape.ub_gather_copy = false;
  const auto plain = model.layer(shape, true);
  for (const auto* pass : {&copied.forward, &copied.backward}) {
    int copies = 0;
    for (size_t i = 0; i < pass->size(); ++i)
      for (const auto& op : (*pass)[i].ops)
        if (op.name == "ub_ag_copy") {
          ++copies;
          // The gather it fills comes next (the copy ends its run, or is a run of its own).
          ASSERT_LT(i + 1, pass->size());
          EXPECT_EQ((*pass)[i + 1].collective, TpCollective::AllGather);
          EXPECT_FALSE((*pass)[i + 1].beside_next);
          EXPECT_EQ(&op, &(*pass)[i].ops.back());
          EXPECT_DOUBLE_EQ(op.bytes, 2 * (*pass)[i + 1].collective_bytes / 8);
        }
    EXPECT_EQ(copies, 2);
  }
  for (const auto* pass : {&plain.forward, &plain.backward})
    for (const auto& seg : *pass)
      for (const auto& op : seg.ops)
        EXPECT_NE(op.name, "ub_ag_copy");
}
