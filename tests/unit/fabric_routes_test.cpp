// The fabric's costs that grow with scale (parallel/fabric_routes.hpp): the switches a group's routes cross, the
// network steps that pay their latency, and static ECMP's slowdown, against a count done by hand and against
// platform::FabricLayout's numbering of NICs and leaves.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <numeric>
#include <vector>

#include "hardware/hardware_yaml.hpp"
#include "parallel/collective.hpp"
#include "parallel/fabric_routes.hpp"
#include "parallel/placement.hpp"
#include "platform/fabric_layout.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::parallel::FabricRoutes;
using dtsim::parallel::Placement;

dtsim::hardware::HardwareSpec load_hardware_file(const char* file)
{
  dtsim::Diagnostics diag;
  auto hw = dtsim::hardware::load_hardware(dtsim::test::source_path(file), diag);
  EXPECT_TRUE(diag.empty());
  return hw;
}

TEST(FabricRoutes, LeavesAreTheLayoutsLeaves)
{
  auto hw = load_hardware_file("hardware/dgx-h100.yaml");
  for (auto topology : {dtsim::hardware::Topology::RailOptimized, dtsim::hardware::Topology::FatTree}) {
    hw.network.topology = topology;
    const Placement placement(512, 8, 1, 8);
    const dtsim::platform::FabricLayout layout(hw, placement);
    const FabricRoutes routes(hw);
    for (int64_t d = 0; d < placement.devices(); d += 3) {
      ASSERT_EQ(routes.nic_of(d, placement), layout.nic_index(d));
      ASSERT_EQ(routes.leaf_of_nic(routes.nic_of(d, placement)), layout.leaf_of_nic(layout.nic_index(d)));
    }
  }
}

// DGX H100: rail leaves of 32 hosts, pods of 32 leaves (4 x 32 hosts x 8 rails = 1,024 GPUs).
TEST(FabricRoutes, SwitchesCrossedByLeafSpineAndCore)
{
  const auto hw = load_hardware_file("hardware/dgx-h100.yaml");
  const FabricRoutes routes(hw);
  const Placement placement(2048, 8, 1, 8);  // 2,048 hosts of 8
  EXPECT_EQ(routes.switches_between(0, 7, placement), 0);         // one host: NVLink
  EXPECT_EQ(routes.switches_between(0, 8 * 31, placement), 1);    // hosts 0 and 31, rail 0: one leaf
  EXPECT_EQ(routes.switches_between(0, 8 * 32, placement), 3);    // host 32: the next leaf of rail 0, same pod
  EXPECT_EQ(routes.switches_between(0, 8 * 32 + 1, placement), 3);  // another rail: through a spine
  EXPECT_EQ(routes.switches_between(0, 8 * 128, placement), 5);   // host 128: the next pod, through a core
  const std::vector<int64_t> leaf = {0, 8, 16, 8 * 31};
  const std::vector<int64_t> pod = {0, 8 * 32, 8 * 127};
  const std::vector<int64_t> cluster = {0, 8 * 32, 8 * 128};
  EXPECT_EQ(routes.switches_spanned(leaf, placement), 1);
  EXPECT_EQ(routes.switches_spanned(pod, placement), 3);
  EXPECT_EQ(routes.switches_spanned(cluster, placement), 5);
  auto two_levels = hw;
  two_levels.network.levels = 2;
  EXPECT_EQ(FabricRoutes(two_levels).switches_spanned(cluster, placement), 3);
}

// Each algorithm's cost gives the network steps that pay the switches' latency (AlgorithmCost::network_steps).
TEST(FabricRoutes, NetworkStepsAreNcclsInterSteps)
{
  using namespace dtsim::collectives;
  auto steps = [](const char* algorithm, Kind kind, int64_t nodes) {
    GroupShape g;
    g.nodes = nodes;
    g.ranks = 8 * nodes;
    g.nvswitch_generation = 3;
    g.nvlink_Bps = 370e9;
    g.nic_Bps = 48e9;
    return predict(*find_algorithm(algorithm), Protocol::Simple, kind, 1e9, g).network_steps;
  };
  EXPECT_EQ(steps("ring", Kind::AllReduce, 16), 30);
  EXPECT_EQ(steps("ring", Kind::ReduceScatter, 16), 15);
  EXPECT_EQ(steps("tree", Kind::AllReduce, 16), 8);
  EXPECT_EQ(steps("tree", Kind::AllReduce, 17), 8);  // log2i: the floor
  EXPECT_EQ(steps("nvls_tree", Kind::AllReduce, 64), 12);
  EXPECT_EQ(steps("nvls", Kind::AllReduce, 1), 0);
  EXPECT_EQ(steps("ring", Kind::AllReduce, 1), 0);
}

// A data-parallel all-reduce across pods pays its switches' latency on every network step: the phase's latency
// grows by steps x (switches - 1) x switch latency over the same plan on a one-switch fabric.
TEST(FabricRoutes, PhaseLatencyGrowsByTheTiersCrossed)
{
  auto hw = load_hardware_file("hardware/dgx-h100.yaml");
  const Placement placement(256, 8, 1, 8);  // dp 256 over 256 hosts: two pods
  std::vector<int64_t> group;
  for (int64_t i = 0; i < 256; ++i)
    group.push_back(i * 8);
  dtsim::collectives::Fabric fabric;
  fabric.nvlink_Bps = hw.scale_up.nvlink.goodput_Bps;
  fabric.nic_Bps = hw.network.nic.goodput_Bps;
  fabric.nic_latency_s = hw.network.nic.latency_s;
  fabric.nvlink_latency_s = hw.scale_up.nvlink.latency_s;
  fabric.nics_per_domain = 8;
  fabric.devices_per_domain = 8;
  fabric.choice.algorithm = "ring";
  fabric.choice.protocol = "simple";
  auto flat = fabric;
  flat.routes = FabricRoutes();  // no switch latency
  fabric.routes = FabricRoutes(hw);
  using dtsim::collectives::Kind;
  const auto tiered = dtsim::collectives::plan_collective(Kind::AllReduce, 1 << 26, group, placement, fabric);
  const auto plain = dtsim::collectives::plan_collective(Kind::AllReduce, 1 << 26, group, placement, flat);
  ASSERT_EQ(tiered.size(), 1u);
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_NEAR(tiered[0].latency_s - plain[0].latency_s, 2.0 * 255 * 4 * hw.network.switch_latency_s, 1e-12);
}

TEST(FabricRoutes, AdaptiveRoutingHasNoCollisions)
{
  const auto hw = load_hardware_file("hardware/dgx-h100.yaml");
  EXPECT_EQ(hw.network.routing, dtsim::hardware::Routing::Adaptive);
  EXPECT_EQ(dtsim::parallel::ecmp_ring_slowdown(hw, Placement(512, 8, 1, 8)), 1.0);
}

// Balls into bins by hand: a fat tree whose leaves hold two NICs of one host (radix 4), two hosts, dp 2 across them.
// Each leaf sends 2 NICs x 2 flows = 4 flows up 2 uplinks: the pool gives each 1/2 of a port, a port that gets
// k > 2 of them 1/k. The simulated answer must be one of those ratios, and averaged over seeds, near the expectation
// of the busiest port's load (over all four leaves, up and down).
TEST(FabricRoutes, StaticEcmpSlowdownIsTheBusiestPort)
{
  auto hw = load_hardware_file("hardware/dgx-h100.yaml");
  hw.network.routing = dtsim::hardware::Routing::StaticEcmp;
  hw.network.topology = dtsim::hardware::Topology::FatTree;
  hw.network.levels = 2;
  hw.network.switch_radix = 4;
  const Placement placement(2, 8, 1, 8);
  double sum = 0;
  const int seeds = 400;
  for (int seed = 1; seed <= seeds; ++seed) {
    hw.network.hash_seed = seed;
    const double s = dtsim::parallel::ecmp_ring_slowdown(hw, placement);
    ASSERT_TRUE(s == 1.0 || s == 1.5 || s == 2.0) << s;
    sum += s;
  }
  // The busiest of a leaf's two ports gets 2 of its 4 flows with probability 6/16, 3 with 8/16, 4 with 2/16; over
  // the 8 leaves (each host's 8 NICs, 2 per leaf) one busiest port of 3 or more flows is all but certain.
  EXPECT_GT(sum / seeds, 1.5);
  EXPECT_LE(sum / seeds, 2.0);
  // More queue pairs per connection spread the flows: the slowdown falls.
  hw.network.qps_per_connection = 16;
  double many = 0;
  for (int seed = 1; seed <= seeds; ++seed) {
    hw.network.hash_seed = seed;
    many += dtsim::parallel::ecmp_ring_slowdown(hw, placement);
  }
  EXPECT_LT(many / seeds, sum / seeds);
}

// The shipped what-if (hardware/dgx-h100-static-ecmp.yaml, rack leaves of two hosts) on the plan of
// scenarios/examples/gpt3-175b-h100x4096-static-ecmp.yaml: half the ring hops leave their rack, 16 flows to 16
// uplinks per leaf over 256 leaves, and the busiest port carries several. More queue pairs spread them.
TEST(FabricRoutes, ShippedWhatIfCollides)
{
  auto hw = load_hardware_file("hardware/dgx-h100-static-ecmp.yaml");
  ASSERT_EQ(hw.network.routing, dtsim::hardware::Routing::StaticEcmp);
  const Placement placement(64, 8, 8, 8);
  const double one_qp = dtsim::parallel::ecmp_ring_slowdown(hw, placement);
  hw.network.qps_per_connection = 8;
  const double eight_qps = dtsim::parallel::ecmp_ring_slowdown(hw, placement);
  std::printf("[fabric] what-if slowdown: %.3f with 1 queue pair per connection, %.3f with 8\n", one_qp, eight_qps);
  EXPECT_GE(one_qp, 1.5);
  EXPECT_LT(eight_qps, one_qp);
  hw.network.routing = dtsim::hardware::Routing::Adaptive;
  EXPECT_EQ(dtsim::parallel::ecmp_ring_slowdown(hw, placement), 1.0);
}

}  // namespace
