// NCCL's PAT (collectives/algorithms/pat.cpp) against NCCL's own formulas, computed here by hand from tuning.cc's
// ncclTopoTuneModel and ncclTopoGetAlgoTime: where it may run (one GPU per node, reduce-scatter and all-gather,
// Simple, NCCL 2.23.4 and later), what it costs, and that NCCL's choice between it and the ring is the cheaper of the
// two at a few sizes and node counts; the stack key that names the NCCL release.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "collectives/algorithm_registry.hpp"
#include "nccl_releases.hpp"
#include "stack/nccl_version.hpp"
#include "stack/stack_yaml.hpp"
#include "test_paths.hpp"
#include "test_units.hpp"

namespace {

using dtsim::collectives::choose;
using dtsim::collectives::find_algorithm;
using dtsim::collectives::GroupShape;
using dtsim::collectives::Kind;
using dtsim::collectives::predict;
using dtsim::collectives::Protocol;

using dtsim::test::kUs;
constexpr double kNicBps = 48.5e9;  // one 400G NIC's goodput (hardware/dgx-h100.yaml)
using dtsim::test::kNccl2223;
using dtsim::test::kNccl2234;
using dtsim::test::kNccl2275;

// `n` ranks on `nodes` nodes of H100 (NVSwitch 3) with one NIC per GPU, under NCCL release `nccl`.
GroupShape group_at_release(int64_t n, int64_t nodes, int nccl)
{
  GroupShape g;
  g.ranks = n;
  g.nodes = nodes;
  g.nvswitch_generation = 3;
  g.nvlink_Bps = 370.8e9;
  g.nic_Bps = kNicBps;
  g.nccl_version = nccl;
  return g;
}

int log2_floor(int64_t v)
{
  int l = 0;
  while (v > 1) {
    v >>= 1;
    ++l;
  }
  return l;
}

// ncclTopoTuneModel's PAT latency, us: 8 + log2i(nNodes) x 14 / 3.5 + nRanks x 2.8; its time, ncclTopoGetAlgoTime:
// latency + bytes / (busBw x .75), busBw the NIC's (one GPU, one NIC per node).
double pat_closed_form_s(int64_t n, double bytes, double factor = 0.75)
{
  return (8.0 + log2_floor(n) * 14.0 / 3.5 + 2.8 * double(n)) * kUs + bytes / (factor * kNicBps);
}

// The ring's, one rank per node: 8.4 + (n - 1) inter-node steps at the tree's 14 us (ppn 1), (n - 1) / n of the
// tensor over the NIC.
double ring_closed_form_s(int64_t n, double bytes)
{
  return (8.4 + double(n - 1) * 14.0) * kUs + double(n - 1) / double(n) * bytes / kNicBps;
}

TEST(Pat, RunsWhereNcclRunsIt)
{
  const auto& pat = *find_algorithm("pat");
  const GroupShape one_per_node = group_at_release(1024, 1024, kNccl2275);
  EXPECT_TRUE(applicable(pat, Protocol::Simple, Kind::ReduceScatter, one_per_node));
  EXPECT_TRUE(applicable(pat, Protocol::Simple, Kind::AllGather, one_per_node));
  EXPECT_FALSE(applicable(pat, Protocol::Simple, Kind::AllReduce, one_per_node));  // tuning.cc skips it
  EXPECT_FALSE(applicable(pat, Protocol::LL, Kind::ReduceScatter, one_per_node));  // Simple only
  EXPECT_FALSE(applicable(pat, Protocol::LL128, Kind::AllGather, one_per_node));
  // ncclPatEnable: nNodes != nRanks turns it off
  EXPECT_FALSE(applicable(pat, Protocol::Simple, Kind::ReduceScatter, group_at_release(2048, 1024, kNccl2275)));
  // the releases before 2.23.4 have no PAT, and a stack that does not publish its NCCL takes their behaviour
  EXPECT_FALSE(applicable(pat, Protocol::Simple, Kind::ReduceScatter, group_at_release(1024, 1024, kNccl2223)));
  EXPECT_FALSE(applicable(pat, Protocol::Simple, Kind::ReduceScatter, group_at_release(1024, 1024, 0)));
  EXPECT_TRUE(applicable(pat, Protocol::Simple, Kind::ReduceScatter, group_at_release(1024, 1024, kNccl2234)));
}

TEST(Pat, CostIsNcclsFormula)
{
  const auto& pat = *find_algorithm("pat");
  for (int64_t n : {2, 16, 1024, 2048, 16384})
    for (double bytes : {1048576.0, 64 * 1048576.0, 4.0 * 1073741824.0}) {
      const auto p = predict(pat, Protocol::Simple, Kind::ReduceScatter, bytes, group_at_release(n, n, kNccl2275));
      EXPECT_NEAR(p.time_s, pat_closed_form_s(n, bytes), 1e-12 * pat_closed_form_s(n, bytes)) << n << " " << bytes;
      EXPECT_EQ(p.network_steps, log2_floor(n));
      // 2.23 priced its bandwidth at .85 of the bus bandwidth
      const auto p23 = predict(pat, Protocol::Simple, Kind::AllGather, bytes, group_at_release(n, n, kNccl2234));
      EXPECT_NEAR(p23.time_s, pat_closed_form_s(n, bytes, 0.85), 1e-12 * p23.time_s);
    }
  // the ring's latency grows linearly, PAT's by 2.8 us a rank where the ring's is 14: at 16,384 nodes 229 ms
  // against 46 ms
  const auto& ring = *find_algorithm("ring");
  EXPECT_NEAR(
      predict(ring, Protocol::Simple, Kind::ReduceScatter, 0, group_at_release(16384, 16384, kNccl2275)).latency_s,
      (8.4 + 16383 * 14.0) * kUs, 1e-12);
  EXPECT_NEAR(
      predict(pat, Protocol::Simple, Kind::ReduceScatter, 0, group_at_release(16384, 16384, kNccl2275)).latency_s,
      (8.0 + 14 * 4.0 + 16384 * 2.8) * kUs, 1e-12);
}

// NCCL's choice at sizes from 1 MiB to 16 GiB on 16 to 16,384 nodes: PAT where its closed form beats the ring's, the
// ring (or another protocol of it) elsewhere; never PAT under a release without it.
TEST(Pat, ChosenWhereNcclsModelPrefersIt)
{
  int chosen = 0, not_chosen = 0;
  for (int64_t n : {16, 128, 1024, 2048, 16384})
    for (double bytes : {1048576.0, 64 * 1048576.0, 1073741824.0, 16.0 * 1073741824.0})
      for (Kind kind : {Kind::ReduceScatter, Kind::AllGather}) {
        const auto c = choose(kind, bytes, group_at_release(n, n, kNccl2275), {});
        const bool pat_cheaper = pat_closed_form_s(n, bytes) < ring_closed_form_s(n, bytes);
        if (pat_cheaper) {
          EXPECT_STREQ(c.algorithm->name, "pat") << n << " nodes, " << bytes << " bytes";
          EXPECT_DOUBLE_EQ(c.time_s, pat_closed_form_s(n, bytes));
          ++chosen;
        } else {
          EXPECT_STREQ(c.algorithm->name, "ring") << n << " nodes, " << bytes << " bytes";
          // NCCL's estimate; the run also pays the Simple ring's steps on every loop (algorithms/ring.cpp)
          EXPECT_LE(c.tuner_time_s, ring_closed_form_s(n, bytes) * (1 + 1e-12));
          EXPECT_GE(c.time_s, c.tuner_time_s);
          ++not_chosen;
        }
        EXPECT_STREQ(choose(kind, bytes, group_at_release(n, n, 0), {}).algorithm->name, "ring");
        EXPECT_STREQ(choose(kind, bytes, group_at_release(8 * n, n, kNccl2275), {}).algorithm->name, "ring");
      }
  // both sides of the crossing are exercised: large tensors on few nodes stay on the ring
  EXPECT_GT(chosen, 0);
  EXPECT_GT(not_chosen, 0);
  // 1,024 nodes: 64 MiB takes PAT (2.9 + 1.8 ms against 14.3 + 1.4 ms), 16 GiB the ring
  EXPECT_STREQ(choose(Kind::ReduceScatter, 64 * 1048576.0, group_at_release(1024, 1024, kNccl2275), {}).algorithm->name,
               "pat");
  EXPECT_STREQ(
      choose(Kind::ReduceScatter, 16.0 * 1073741824.0, group_at_release(1024, 1024, kNccl2275), {}).algorithm->name,
      "ring");
  // forcing PAT where it cannot run falls back to the ring, as for every algorithm
  EXPECT_STREQ(choose(Kind::AllReduce, 1048576.0, group_at_release(1024, 1024, kNccl2275), {"pat", ""}).algorithm->name,
               "ring");
}

TEST(Pat, StackKeyNamesTheNcclRelease)
{
  using dtsim::stack::nccl_version_code;
  EXPECT_EQ(nccl_version_code("2.23.4"), 22304);
  EXPECT_EQ(nccl_version_code("2.27.5+"), 22705);
  EXPECT_EQ(nccl_version_code("2.9.9"), 20909);
  EXPECT_EQ(nccl_version_code("unpublished"), 0);
  for (const char* bad : {"", "2.23", "v2.23.4", "2.23.4-1", "latest", "2.23.4++"})
    EXPECT_EQ(nccl_version_code(bad), -1) << bad;
  dtsim::Diagnostics diag;
  const auto st = dtsim::stack::load_stack(dtsim::test::source_path("tests/unit/data/stack-nccl-pat.yaml"), diag);
  EXPECT_TRUE(diag.empty());
  EXPECT_EQ(st.nccl_version, 22705);
}

}  // namespace
