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
