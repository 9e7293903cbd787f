// The closed forms that keep a frontier step's set-up independent of the number of devices (docs/performance.md,
// "One step at any scale"), each against the enumeration it replaces: the double binary tree's largest degree, a
// NIC's leaf and a leaf's NICs, the shape of the group of every device and the switch tiers it spans.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <vector>

#include "collectives/algorithm_parts.hpp"
#include "hardware/hardware_yaml.hpp"
#include "parallel/collective.hpp"
#include "parallel/fabric_routes.hpp"
#include "parallel/placement.hpp"
#include "platform/fabric_layout.hpp"
#include "test_paths.hpp"

namespace {

TEST(FrontierLayout, TreeDegreeIsTheMostLinksOfAnyNode)
{
  for (int64_t nodes = 0; nodes < 3000; ++nodes) {
    std::vector<int64_t> degree(size_t(nodes), 0);
    dtsim::collectives::for_each_tree_link(nodes, [&](int64_t c, int64_t p) {
      ++degree[size_t(c)];
      ++degree[size_t(p)];
    });
    const int64_t most = nodes > 0 ? *std::max_element(degree.begin(), degree.end()) : 0;
    ASSERT_EQ(dtsim::collectives::max_tree_degree(nodes), most) << nodes << " nodes";
  }
}

// Leaves counted NIC by NIC, as the layout listed them before: rails by host (rail-optimized) or NICs in order.
TEST(FrontierLayout, LeavesAreTheNicsCountedOneByOne)
{
  dtsim::Diagnostics diag;
  auto hw = dtsim::hardware::load_hardware(dtsim::test::source_path("hardware/dgx-a100-80gb.yaml"), diag);
  ASSERT_TRUE(diag.empty());
  for (auto topology : {dtsim::hardware::Topology::RailOptimized, dtsim::hardware::Topology::FatTree})
    for (int64_t nodes : {1, 7, 20, 21, 256, 259}) {
      hw.network.topology = topology;
      const dtsim::parallel::Placement placement(nodes, 8, 1, 8);
      const dtsim::platform::FabricLayout layout(hw, placement);
      const int64_t nics = hw.network.nics_per_node, group = hw.network.switch_radix / 2;
      ASSERT_EQ(layout.nic_count(), nodes * nics);
      std::map<int64_t, int64_t> per_leaf;
      for (int64_t n = 0; n < nodes; ++n)
        for (int64_t l = 0; l < nics; ++l) {
          const int64_t leaf = topology == dtsim::hardware::Topology::RailOptimized ? (n / group) * nics + l
                                                                                    : (n * nics + l) / group;
          ASSERT_EQ(layout.leaf_of_nic(n * nics + l), leaf);
          ++per_leaf[leaf];
        }
      ASSERT_EQ(layout.leaves(), per_leaf.rbegin()->first + 1);
      for (int64_t leaf = 0; leaf < layout.leaves(); ++leaf)
        EXPECT_EQ(layout.nics_in_leaf(leaf), per_leaf.count(leaf) ? per_leaf[leaf] : 0) << nodes << " nodes";
    }
}

TEST(FrontierLayout, EveryDeviceShapeIsTheListedGroupsShape)
{
  dtsim::collectives::Fabric f;
  f.nvlink_Bps = 370.8e9;
  f.nic_Bps = 48.5e9;
  f.nics_per_domain = 8;
  f.devices_per_domain = 8;
  f.full_mesh = true;  // the fewest members of a domain counts
  for (int64_t per_domain : {1, 6, 8, 64})
    for (int64_t devices : {int64_t(1), int64_t(2), int64_t(8), int64_t(12), int64_t(96), int64_t(130)}) {
      const dtsim::parallel::Placement placement(devices, 1, 1, per_domain);
      std::vector<int64_t> everyone(static_cast<size_t>(devices), 0);
      std::iota(everyone.begin(), everyone.end(), int64_t(0));
      const auto listed = dtsim::collectives::group_shape(everyone, placement, f);
      const auto shape = dtsim::collectives::every_device_shape(placement, f);
      EXPECT_EQ(shape.ranks, listed.ranks);
      EXPECT_EQ(shape.nodes, listed.nodes) << devices << " devices, " << per_domain << " per domain";
      EXPECT_EQ(shape.uniform, listed.uniform) << devices << " devices, " << per_domain << " per domain";
      EXPECT_EQ(shape.nvlink_Bps, listed.nvlink_Bps) << devices << " devices, " << per_domain << " per domain";
      EXPECT_EQ(shape.nic_Bps, listed.nic_Bps);
    }
}

// The gradient-norm all-reduce's switch tiers (parallel/step_collectives.cpp): the group of every device, unlisted,
// spans what the listed group spans, on rails and fat trees of one to three levels, full and partial domains.
TEST(FrontierLayout, EveryDeviceSwitchTiersAreTheListedGroups)
{
  for (const char* file : {"hardware/dgx-h100.yaml", "hardware/gb200-nvl72.yaml", "hardware/dgx-a100-80gb.yaml"}) {
    dtsim::Diagnostics diag;
    auto hw = dtsim::hardware::load_hardware(dtsim::test::source_path(file), diag);
    ASSERT_TRUE(diag.empty()) << file;
    for (auto topology : {dtsim::hardware::Topology::RailOptimized, dtsim::hardware::Topology::FatTree})
      for (int levels : {1, 2, 3})
        for (int64_t devices : {1, 2, 8, 16, 72, 100, 256, 1000, 2304, 4608, 9216, 33000}) {
          hw.network.topology = topology;
          hw.network.levels = levels;
          const dtsim::parallel::FabricRoutes routes(hw);
          const dtsim::parallel::Placement placement(devices, 1, 1, hw.domain_devices());
          std::vector<int64_t> everyone(static_cast<size_t>(devices), 0);
          std::iota(everyone.begin(), everyone.end(), int64_t(0));
          ASSERT_EQ(routes.switches_spanned_by_every_device(placement), routes.switches_spanned(everyone, placement))
              << file << ", " << levels << " levels, " << devices << " devices";
        }
  }
}

}  // namespace
