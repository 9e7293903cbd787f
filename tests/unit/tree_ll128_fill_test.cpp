// The tree's pipeline fill under LL128 (collectives/algorithms/tree.cpp, tree_run_latency_us), computed here by hand
// from NVIDIA/nccl v2.24.3-1: src/enqueue.cc calcCollChunking (the tree LL128 branch, each channel's share apart),
// src/device/all_reduce.h runTreeSplit (14 warps reduce up, 6 broadcast down) and prims_ll128.h GenericOp (a warp
// hands on its 1,920 B slice once all of it has arrived).
#include <gtest/gtest.h>

#include "collectives/algorithm_registry.hpp"
#include "test_units.hpp"

namespace {

using dtsim::collectives::find_algorithm;
using dtsim::collectives::GroupShape;
using dtsim::collectives::Kind;
using dtsim::collectives::predict;
using dtsim::collectives::Protocol;
using dtsim::test::kUs;
using dtsim::test::MiB;

// 4 nodes of 8 H100 (NVSwitch 3, 370.8 GB/s to the switch), 8 NDR NICs of 48.5 GB/s per node: reference A.3.a's
// system under its NCCL 2.24.3 (the hardware file's goodputs, hardware/dgx-h100.yaml).
GroupShape tree_fill_four_h100_nodes()
{
  GroupShape g;
  g.ranks = 32;
  g.nodes = 4;
  g.nvswitch_generation = 3;
  g.nvlink_Bps = 370.8e9;
  g.nic_Bps = 48.5e9;
  g.nccl_version = 22403;
  return g;
}

// 1 MiB on 16 channels (the ring graph's 8, doubled twice: connect.cc) is 65,536 B a channel. Its chunk: 576,000 B
// halved while under nsteps x 64 / ppn = 3.8 x 8 = 30.4 chunks and over 128 KiB (72,000 B), then while under 7.6
// chunks and over 32 KiB (18,000 B), aligned down to 1,920 B: 17,280 B. Up, one pass of 14 warps holds it whole;
// down, 6 warps pass 11,520 B. A hop: 16 channels' passes through one NVLink at 370.8 GB/s x 0.92 x 120/128, or 2
// channels' through one NIC at 48.5 GB/s x the same. Up 7 NVLink and 2 network hops, down the same; the busiest
// link's up pass (an NVLink's) is in the tuner's bandwidth already.
TEST(TreeLl128Fill, FourH100NodesAtOneMiB)
{
  const GroupShape g = tree_fill_four_h100_nodes();
  const double frac = 0.92 * 120.0 / 128.0;
  const double nvlink_hop_per_B = 16.0 / (370.8e9 * frac), nic_hop_per_B = 2.0 / (48.5e9 * frac);
  const double up = 17280, down = 11520;
  const double fill_s = up * (7 * nvlink_hop_per_B + 2 * nic_hop_per_B) +
                        down * (7 * nvlink_hop_per_B + 2 * nic_hop_per_B) - up * nvlink_hop_per_B;
  const auto r = predict(*find_algorithm("tree"), Protocol::LL128, Kind::AllReduce, 1 * MiB, g);
  EXPECT_NEAR(r.time_s - r.tuner_time_s, fill_s, 1e-9);
  EXPECT_NEAR(fill_s / kUs, 12.0, 0.1);
  // NCCL's tuner: 14 + 2 x 7 x 1.25 + 4 x 8.5 = 65.5 us, and the tensor at the tree LL128 cap (8 x 29 GB/s, x the
  // size correction 0.6 at 1 MiB), algorithm bandwidth half the bus's: 15.1 us. Measured (A.3.a) 92.5 us.
  EXPECT_NEAR(r.tuner_time_s / kUs, 80.6, 0.1);
  EXPECT_NEAR(r.time_s / kUs, 92.5, 0.1);
}

// The fill is the run's alone: NCCL's choice is made on its tuner's time, and LL, which hands on each 8 B line as it
// arrives, and Simple take none.
TEST(TreeLl128Fill, OnlyLl128AndNotInTheChoice)
{
  const GroupShape g = tree_fill_four_h100_nodes();
  for (Protocol p : {Protocol::LL, Protocol::Simple}) {
    const auto r = predict(*find_algorithm("tree"), p, Kind::AllReduce, 1 * MiB, g);
    EXPECT_DOUBLE_EQ(r.time_s, r.tuner_time_s);
  }
}

// A larger share keeps a chunk larger than a pass, and a pass is then what the warps hold: on 64 nodes of one H100
// each (4 channels, 2 x 2 of the ring graph's one, one NIC), 256 MiB is 64 MiB a channel, which the chunk of
// 576,000 B, halved twice to 144,000 B, cuts into 466 >= nsteps x 64 = 454.4 chunks; up 26,880 B and down 11,520 B
// cross 6 network hops each, 4 channels through the one NIC, less the busiest (up) one.
TEST(TreeLl128Fill, OneGpuPerNodePassesAreTheWarps)
{
  GroupShape g = tree_fill_four_h100_nodes();
  g.ranks = 64;
  g.nodes = 64;
  const double nic_hop_per_B = 4.0 / (48.5e9 * 0.92 * 120.0 / 128.0);
  const double fill_s = (26880.0 * 6 + 11520.0 * 6 - 26880.0) * nic_hop_per_B;
  const auto r = predict(*find_algorithm("tree"), Protocol::LL128, Kind::AllReduce, 256 * MiB, g);
  EXPECT_NEAR(r.time_s - r.tuner_time_s, fill_s, 1e-9);
}

}  // namespace
