// NCCL's channels and per-channel caps (sim/collectives/channel_caps.hpp): the ring graph's channels as
// src/graph/search.cc finds them on NVSwitch nodes, and the caps of tuning.cc binding where NCCL's tuner says.
#include <gtest/gtest.h>

#include "collectives/algorithm_parts.hpp"
#include "collectives/channel_caps.hpp"

namespace {

using namespace dtsim::collectives;

GroupShape node(int generation, double nvlink_GBps, int64_t nodes = 1, double nic_GBps = 48.5)
{
  GroupShape g;
  g.nodes = nodes;
  g.ranks = 8 * nodes;
  g.nvswitch_generation = generation;
  g.nvlink_Bps = nvlink_GBps * 1e9;
  g.nic_Bps = nic_GBps * 1e9;
  return g;
}

TEST(ChannelCaps, RingGraphChannelsAsNcclSearchFindsThem)
{
  // A100: 6 rings at 40 GB/s fill 12 x 20 GB/s, doubled to 12 at 20 (ccMin 80). H100: 6 at 60 GB/s (360 of 370.8;
  // no slower speed gives more), doubled to 12 at 30. B200: 8 at 90 GB/s, doubled to 16 at 45.
  EXPECT_EQ(ring_graph_channels(node(2, 240.0)), 12);
  EXPECT_EQ(ring_graph_channels(node(3, 370.8)), 12);
  EXPECT_EQ(ring_graph_channels(node(4, 721.8)), 16);
  // Across nodes one ring per member's NIC; no generation known, no channels and no caps.
  EXPECT_EQ(ring_graph_channels(node(3, 370.8, 4)), 8);
  EXPECT_EQ(ring_graph_channels(node(0, 370.8)), 0);
  EXPECT_EQ(channel_cap_Bps(ChannelCap::Tree, node(0, 370.8, 4)), 0.0);
}

TEST(ChannelCaps, CapsTakeTheTunersPerChannelFigures)
{
  EXPECT_DOUBLE_EQ(channel_cap_Bps(ChannelCap::RingLL128, node(3, 370.8, 4)), 8 * 36.7e9);
  EXPECT_DOUBLE_EQ(channel_cap_Bps(ChannelCap::Tree, node(3, 370.8, 2)), 8 * 41.4e9);
  EXPECT_DOUBLE_EQ(channel_cap_Bps(ChannelCap::Tree, node(2, 240.0, 4, 24.0)), 8 * 17.8e9);
  EXPECT_DOUBLE_EQ(channel_cap_Bps(ChannelCap::NvlsTree, node(3, 370.8, 4)), 8 * 45.5e9);
  EXPECT_DOUBLE_EQ(channel_cap_Bps(ChannelCap::RingLL128, node(4, 721.8)), 16 * 40.0e9);
}

TEST(ChannelCaps, EachAlgorithmDeclaresItsCapsInItsEntry)
{
  // 4 x 8 H100: the ring is capped under LL128 only, the tree under every protocol (LL at a 3.8th, LL128 at the
  // lower of 120/128 of its cap and its LL128 cap), the NVLS tree at its own cap from NCCL 2.28.3; NVLS within a node
  // has none.
  const GroupShape g = node(3, 370.8, 4);
  const auto cap = [&](const char* name, Protocol p) { return find_algorithm(name)->bus_cap_Bps(p, g); };
  EXPECT_EQ(cap("ring", Protocol::Simple), 0.0);
  EXPECT_EQ(cap("ring", Protocol::LL), 0.0);
  EXPECT_DOUBLE_EQ(cap("ring", Protocol::LL128), 8 * 36.7e9);
  EXPECT_DOUBLE_EQ(cap("tree", Protocol::Simple), 8 * 36.0e9);
  EXPECT_DOUBLE_EQ(cap("tree", Protocol::LL), 8 * 36.0e9 / 3.8);
  EXPECT_DOUBLE_EQ(cap("tree", Protocol::LL128), 8 * 29.0e9);
  // the NVLS tree's cap came with NCCL 2.28.3 (5067397c is 2.30.7); the releases before have none
  EXPECT_EQ(cap("nvls_tree", Protocol::Simple), 0.0);
  GroupShape recent = g;
  recent.nccl_version = 23007;
  EXPECT_DOUBLE_EQ(find_algorithm("nvls_tree")->bus_cap_Bps(Protocol::Simple, recent), 8 * 45.5e9);
  EXPECT_EQ(find_algorithm("nvls")->bus_cap_Bps(Protocol::Simple, node(3, 370.8)), 0.0);
}

TEST(ChannelCaps, TheRingsLL128AcrossNodesRunsAtItsCap)
{
  // 4 x 8 H100, 8 NICs of 48.5 GB/s: the ring's LL128 would reach 8 x 48.5 x .92 = 357 GB/s of bus bandwidth; NCCL
  // caps it at 8 channels x 36.7 GB/s.
  const GroupShape g = node(3, 370.8, 4);
  const double bytes = 1 << 30;
  const Prediction p = predict(*find_algorithm("ring"), Protocol::LL128, Kind::AllReduce, bytes, g);
  EXPECT_NEAR(p.time_s - p.latency_s, ring_volume(Kind::AllReduce, 32) * bytes / (8 * 36.7e9), 1e-9);
}

TEST(ChannelCaps, TheTreeAcrossFourNodesRunsAtItsCap)
{
  // 4 x 8 A100, 8 HDR NICs of 24 GB/s, Simple, 1 GiB (no size correction from 512 MiB): the tree's bus bandwidth is
  // at most 8 x 17.8 GB/s, its algorithm bandwidth half of that.
  const GroupShape g = node(2, 240.0, 4, 24.0);
  const double bytes = 1 << 30;
  const Prediction p = predict(*find_algorithm("tree"), Protocol::Simple, Kind::AllReduce, bytes, g);
  EXPECT_NEAR(p.time_s - p.latency_s, 2 * bytes / (8 * 17.8e9), 1e-9);
}

}  // namespace
