// The cluster platform's routes through a three-level fabric (sim/platform/cluster_platform.cpp). With 2,048 GPUs on
// DGX A100 nodes (8 rail-optimized NICs per node, 40-port switches: 20 nodes per leaf, 20 leaves per pod) there are
// 104 leaves in 6 pods, the last pod holding 4 leaves; the routes must cross both pod uplinks and keep their NIC links.
// (Written against a first fix of simgrid/simgrid#389 that kept pod zones; it checks the same routes of the fix in
// place, see platform_test.cpp.)
#include <gtest/gtest.h>

#include <simgrid/s4u.hpp>

#include <string>
#include <vector>

#include "hardware/hardware_yaml.hpp"
#include "platform/cluster_platform.hpp"
#include "test_paths.hpp"

namespace {

namespace sg4 = simgrid::s4u;

std::string route(const dtsim::platform::ClusterPlatform& p, int64_t a, int64_t b)
{
  std::vector<sg4::Link*> links;
  double latency = 0;
  p.nic(a)->route_to(p.nic(b), links, &latency);
  std::string s;
  for (auto* l : links)
    s += (s.empty() ? "" : " ") + l->get_name();
  return s;
}

// A SimGrid engine (one per test process) and the DGX A100 hardware file as shipped.
class ClusterPlatformPods : public ::testing::Test {
 protected:
  void SetUp() override
  {
    dtsim::Diagnostics diag;
    hw = dtsim::hardware::load_hardware(dtsim::test::source_path("hardware/dgx-a100-80gb.yaml"), diag);
    ASSERT_TRUE(diag.empty());
  }
  int argc = 1;
  char name[14] = "platform_test";
  char* argv[2] = {name, nullptr};
  sg4::Engine engine{&argc, argv};
  dtsim::hardware::HardwareSpec hw;
};

TEST_F(ClusterPlatformPods, RoutesAcrossPodsOfAThreeLevelFabric)
{
  ASSERT_EQ(hw.network.levels, 3);
  hw.network.oversubscription = 2;  // uplinks are built only where they can be a bottleneck
  const dtsim::parallel::Placement placement(32, 8, 8, 8);  // 2,048 GPUs, 256 nodes
  const dtsim::platform::ClusterPlatform p(hw, placement);
  // Device 2044 is node 255, rail 4: leaf (255 / 20) * 8 + 4 = 100, in the last pod (5); device 1796 is node 224,
  // rail 4: leaf 92, pod 4; device 0: leaf 0, pod 0; device 168 is node 21, rail 0: leaf 8, pod 0.
  EXPECT_EQ(route(p, 2044, 1796),
            "niclink2044_UP leafup100_UP podup5_UP podup4_DOWN leafup92_DOWN niclink1796_DOWN");
  EXPECT_EQ(route(p, 0, 2044), "niclink0_UP leafup0_UP podup0_UP podup5_DOWN leafup100_DOWN niclink2044_DOWN");
  EXPECT_EQ(route(p, 0, 168), "niclink0_UP leafup0_UP leafup8_DOWN niclink168_DOWN");  // same pod
  EXPECT_EQ(route(p, 0, 8), "niclink0_UP niclink8_DOWN");                              // same leaf
}

// Without oversubscription the uplinks carry at least what their NICs can and are never a bottleneck: the fabric is
// one switch and every route between nodes is its two NIC links.
TEST_F(ClusterPlatformPods, NonBlockingFabricIsOneSwitch)
{
  ASSERT_EQ(hw.network.oversubscription, 1);
  const dtsim::parallel::Placement placement(32, 8, 8, 8);
  const dtsim::platform::ClusterPlatform p(hw, placement);
  EXPECT_EQ(route(p, 2044, 1796), "niclink2044_UP niclink1796_DOWN");
  EXPECT_EQ(route(p, 0, 168), "niclink0_UP niclink168_DOWN");
  EXPECT_EQ(p.link_count(), 2048 + 2048);  // an NVLink and a NIC link per GPU, no uplinks
}

}  // namespace
