// The ring's LL and LL128 by NCCL release (collectives/algorithms/ring.cpp, algorithm_registry.cpp's llMaxBws),
// against NCCL's tuner computed here by hand from src/graph/tuning.cc at the tags named: ncclTopoTuneModel's
// latency, base + nsteps x the NVLink step, and bus bandwidth, the graph's channels x speed times the protocol's
// fraction, capped by llMaxBw, converted to algorithm bandwidth by nRanks / nsteps; ncclTopoGetAlgoTime's time,
// latency + bytes / algorithm bandwidth.
#include <gtest/gtest.h>

#include <algorithm>

#include "collectives/algorithm_registry.hpp"
#include "nccl_releases.hpp"
#include "test_units.hpp"

namespace {

using dtsim::collectives::find_algorithm;
using dtsim::collectives::GroupShape;
using dtsim::collectives::Kind;
using dtsim::collectives::predict;
using dtsim::collectives::Protocol;

constexpr double kGBps = 1e9;
using dtsim::test::kNccl2194;
using dtsim::test::kNccl2205;
using dtsim::test::kNccl2215;
using dtsim::test::kNccl2223;
using dtsim::test::kNccl2234;
using dtsim::test::kUs;
using dtsim::test::MiB;

// One node of 8 GPUs behind NVSwitch `generation`, each link to the switch at `nvlink_GBps` (the graph's 12 channels
// of 20 GB/s on A100: 240; 12 of 30.9 on H100: 370.8), under NCCL release `nccl` (0: unpublished).
GroupShape node_at_release(int generation, double nvlink_GBps, int nccl)
{
  GroupShape g;
  g.ranks = 8;
  g.nodes = 1;
  g.nvswitch_generation = generation;
  g.nvlink_Bps = nvlink_GBps * kGBps;
  g.nccl_version = nccl;
  return g;
}

double ring_ll_tuner_s(Kind kind, double bytes, const GroupShape& g)
{
  return predict(*find_algorithm("ring"), Protocol::LL, kind, bytes, g).tuner_time_s;
}

// NCCL's ring LL time in one node of 8: baseLat 6.6 us + nsteps x hwLat[NVLINK][RING][LL] 0.6 us, and the bytes at
// min(llMaxBw, busBw x fraction) x 8 / nsteps.
double nccl_ring_ll_s(int nsteps, double bytes, double bus_GBps, double fraction, double ll_max_GBps)
{
  const double alg_GBps = std::min(ll_max_GBps, bus_GBps * fraction) * 8.0 / double(nsteps);
  return (6.6 + 0.6 * nsteps) * kUs + bytes / (alg_GBps * kGBps);
}

// tuning.cc up to v2.20.5-1: "busBw * ((nNodes > 1 || coll == ncclFuncAllReduce || coll == ncclFuncReduce) ?
// 1.0/4.0 : 1.0/3.0)"; from v2.21.5-1: "busBw * .5". On A100 (llMaxBws Ampere-N1 87.7 in every release) the
// all-reduce of 1 MiB takes 45.6 us under 2.19.4, 35.9 us from 2.21.5.
TEST(RingProtocolRelease, LlAllReduceTookAQuarterBefore221)
{
  const double bytes = 1 * MiB;
  EXPECT_NEAR(ring_ll_tuner_s(Kind::AllReduce, bytes, node_at_release(2, 240, kNccl2194)),
              nccl_ring_ll_s(14, bytes, 240, 0.25, 87.7), 1e-9);
  EXPECT_NEAR(ring_ll_tuner_s(Kind::AllReduce, bytes, node_at_release(2, 240, kNccl2194)), 45.58 * kUs, 0.01 * kUs);
  EXPECT_NEAR(ring_ll_tuner_s(Kind::AllReduce, bytes, node_at_release(2, 240, kNccl2215)),
              nccl_ring_ll_s(14, bytes, 240, 0.5, 87.7), 1e-9);
  // A stack that does not publish its NCCL keeps the half.
  EXPECT_NEAR(ring_ll_tuner_s(Kind::AllReduce, bytes, node_at_release(2, 240, 0)),
              nccl_ring_ll_s(14, bytes, 240, 0.5, 87.7), 1e-9);
}

// Within a node all-gather and reduce-scatter took a third before 2.21 (n - 1 steps).
TEST(RingProtocolRelease, LlAllGatherTookAThirdWithinANodeBefore221)
{
  const double bytes = 1 * MiB;
  for (Kind kind : {Kind::AllGather, Kind::ReduceScatter}) {
    EXPECT_NEAR(ring_ll_tuner_s(kind, bytes, node_at_release(2, 240, kNccl2194)),
                nccl_ring_ll_s(7, bytes, 240, 1.0 / 3.0, 87.7), 1e-9);
    EXPECT_NEAR(ring_ll_tuner_s(kind, bytes, node_at_release(2, 240, kNccl2215)),
                nccl_ring_ll_s(7, bytes, 240, 0.5, 87.7), 1e-9);
  }
}

// llMaxBws' Hopper-N1 entry: 87.7 GB/s up to v2.20.5-1, 141 from v2.21.5-1; on 8 H100 it binds under both.
TEST(RingProtocolRelease, HopperLlCapRaisedIn221)
{
  const double bytes = 4 * MiB;
  EXPECT_NEAR(ring_ll_tuner_s(Kind::AllReduce, bytes, node_at_release(3, 370.8, kNccl2205)),
              nccl_ring_ll_s(14, bytes, 370.8, 0.25, 87.7), 1e-9);
  EXPECT_NEAR(ring_ll_tuner_s(Kind::AllReduce, bytes, node_at_release(3, 370.8, kNccl2215)),
              nccl_ring_ll_s(14, bytes, 370.8, 0.5, 141.0), 1e-9);
  EXPECT_NEAR(ring_ll_tuner_s(Kind::AllReduce, bytes, node_at_release(3, 370.8, 0)),
              nccl_ring_ll_s(14, bytes, 370.8, 0.5, 141.0), 1e-9);
}

// LL128 with one GPU per node: busBw x 0.7 up to v2.22.3-1 ("ppn < 2 ? 0.7 : 0.92"), x 0.92 from v2.23.4-1; with
// 8 per node 0.92 in every release. 4 nodes, one 48.5 GB/s NIC each, no channel cap known (no NVSwitch given).
TEST(RingProtocolRelease, Ll128OneGpuPerNodeDiscountedBefore223)
{
  GroupShape g;
  g.ranks = 4;
  g.nodes = 4;
  g.nic_Bps = 48.5 * kGBps;
  const auto& ring = *find_algorithm("ring");
  auto link_s = [&](int nccl) {
    g.nccl_version = nccl;
    const auto p = predict(ring, Protocol::LL128, Kind::AllReduce, 64 * MiB, g);
    return p.time_s - p.latency_s;
  };
  const double volume = 2.0 * 3.0 / 4.0 * 64 * MiB;
  EXPECT_NEAR(link_s(kNccl2223), volume / (0.7 * 48.5 * kGBps), 1e-9);
  EXPECT_NEAR(link_s(kNccl2234), volume / (0.92 * 48.5 * kGBps), 1e-9);
  // Unpublished keeps 0.92: the stacks that name no release were fitted with it (ring.cpp).
  EXPECT_NEAR(link_s(0), volume / (0.92 * 48.5 * kGBps), 1e-9);
}

// The all-reduce ring's LL128 chunks before v2.20.3-1 (device/all_reduce.h runRing at v2.19.4-1): rounded up to
// 19,200 B (640 threads x 60 B / 2) and laid chunk by chunk across the 24 kernel channels, so below one pass of
// 38,400 B the run's 14 hops each carry a whole rounded chunk at a 24th of the bus bandwidth (0.92 x 240 GB/s on
// A100). 4 MiB: 4,194,304 B over 24 x 8 chunks is 21,845 B, rounded to 38,400; NCCL's tuner 73.8 us, the run
// 40.6 us + 14 x 38,400 B / 9.2 GB/s = 99.0 us. From v2.22.3-1 a chunk is the share itself (aligned to 16 B) and
// the run is the tuner's time (2.20.3-2.21.x round to 9,600 B: not modelled, no stack or curve names them); 8 MiB
// (57,600 B chunks, two passes that overlap from hop to hop) keeps the tuner's time too, as do all-gather and
// reduce-scatter, and a stack that names no release.
TEST(RingProtocolRelease, Ll128AllReduceChunksRoundedBefore2203)
{
  const auto& ring = *find_algorithm("ring");
  auto run = [&](Kind kind, double bytes, int nccl) {
    return predict(ring, Protocol::LL128, kind, bytes, node_at_release(2, 240, nccl));
  };
  const double per_channel_Bps = 0.92 * 240 * kGBps / 24;
  const auto before = run(Kind::AllReduce, 4 * MiB, kNccl2194);
  EXPECT_NEAR(before.tuner_time_s, 73.8 * kUs, 0.05 * kUs);
  EXPECT_NEAR(before.time_s, (14.0 + 14 * 1.9) * kUs + 14 * 38400.0 / per_channel_Bps, 1e-9);
  EXPECT_NEAR(before.time_s, 99.0 * kUs, 0.05 * kUs);
  const auto after = run(Kind::AllReduce, 4 * MiB, kNccl2223);
  EXPECT_NEAR(after.time_s, after.tuner_time_s, 1e-12);
  EXPECT_NEAR(after.time_s, before.tuner_time_s, 1e-12);
  const auto two_passes = run(Kind::AllReduce, 8 * MiB, kNccl2194);
  EXPECT_NEAR(two_passes.time_s, two_passes.tuner_time_s, 1e-12);
  for (Kind kind : {Kind::AllGather, Kind::ReduceScatter}) {
    const auto p = run(kind, 4 * MiB, kNccl2194);
    EXPECT_NEAR(p.time_s, p.tuner_time_s, 1e-12);
  }
  const auto unpublished = run(Kind::AllReduce, 4 * MiB, 0);
  EXPECT_NEAR(unpublished.time_s, unpublished.tuner_time_s, 1e-12);
}

}  // namespace
