// Routes of the three-level fabric (rail-optimized DGX A100 cluster, 20 nodes per leaf group, 20 leaves per pod):
// every NIC-to-NIC route crosses both NIC links, both leaf uplinks when the leaves differ, and both pod uplinks
// when the pods differ, with the NIC latency end to end. SimGrid 3.32 resolved nested pod zones wrongly (another
// leaf's uplink and no NIC links, or an unordered_map::at crash; simgrid/simgrid issue #389).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include <simgrid/s4u.hpp>

#include "platform/cluster_platform.hpp"
#include "replay/activities.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::test::source_path;

std::vector<std::string> route_names(simgrid::s4u::Host* a, simgrid::s4u::Host* b, double& latency)
{
  std::vector<simgrid::s4u::Link*> links;
  latency = 0;
  a->route_to(b, links, &latency);
  std::vector<std::string> names;
  for (auto* l : links)
    names.push_back(l->get_name());
  return names;
}

// One engine per process: both checks in one test.
TEST(ClusterPlatform, ThreeLevelFabricRoutes)
{
  // 60 nodes: 3 leaf groups of 20 nodes x 8 rails = 24 leaves, so pods 0 (leaves 0-19) and 1 (leaves 20-23).
  auto s = dtsim::scenario::load_scenario(source_path("scenarios/tiny.yaml"),
                                          {"devices=480", "parallel.tp=8", "parallel.pp=1", "training.global_batch=480",
                                           "training.micro_batch=1", "hardware.network.topology.oversubscription=2"});
  ASSERT_EQ(s.hardware.network.levels, 3);
  dtsim::replay::Activities engine;
  dtsim::parallel::Placement placement(s.parallel.dp, s.parallel.tp, s.parallel.pp, s.hardware.node.devices);
  dtsim::platform::ClusterPlatform p(s.hardware, placement);
  // Links carry no latency (Activities::flow waits the route's latency with a timer): SimGrid's routes have none,
  // the platform reports the hardware's.
  EXPECT_DOUBLE_EQ(p.route_latency(false), s.hardware.network.nic.latency_s);
  EXPECT_DOUBLE_EQ(p.route_latency(true), s.hardware.scale_up.nvlink.latency_s);
  double lat = -1;

  // Same leaf (rail 0 of nodes 0 and 1): the two NIC links.
  auto same_leaf = route_names(p.nic(0), p.nic(8), lat);
  EXPECT_EQ(same_leaf, (std::vector<std::string>{"niclink0_UP", "niclink8_DOWN"}));
  EXPECT_EQ(lat, 0.0);

  // Rail 0 of node 0 (leaf 0) to rail 0 of node 20 (leaf 8), both in pod 0: through both leaf uplinks.
  auto same_pod = route_names(p.nic(0), p.nic(20 * 8), lat);
  EXPECT_EQ(same_pod, (std::vector<std::string>{"niclink0_UP", "leafup0_UP", "leafup8_DOWN", "niclink160_DOWN"}));
  EXPECT_EQ(lat, 0.0);

  // Rail 4 of node 40 (leaf 2 * 8 + 4 = 20, pod 1) to rail 0 of node 0 (leaf 0, pod 0): and both pod uplinks.
  auto cross_pod = route_names(p.nic(40 * 8 + 4), p.nic(0), lat);
  EXPECT_EQ(cross_pod, (std::vector<std::string>{"niclink324_UP", "leafup20_UP", "podup1_UP", "podup0_DOWN",
                                                 "leafup0_DOWN", "niclink0_DOWN"}));
  EXPECT_EQ(lat, 0.0);
}

// A folded frontier step builds a few hosts of a 131,072-device cluster: the listed devices and their NICs exist, the
// others are not built and asking for one is an internal error; the tables over every device hold no stale host.
TEST(ClusterPlatform, BuildsTheListedDevicesOfAFrontierClusterOnly)
{
  auto s = dtsim::scenario::load_scenario(source_path("scenarios/tiny.yaml"), {});
  ASSERT_EQ(s.hardware.node.devices, 8);
  dtsim::replay::Activities engine;
  const dtsim::parallel::Placement placement(16384, 8, 1, 8);  // 131,072 devices, 16,384 nodes
  const std::vector<int64_t> listed{0, 1, 65536, 131071};
  dtsim::platform::ClusterPlatform p(s.hardware, placement, listed);
  for (int64_t d : listed) {
    EXPECT_EQ(p.gpu(d)->get_name(), "gpu" + std::to_string(d));
    EXPECT_NE(p.nic(d), nullptr);
  }
  EXPECT_NE(p.nic(0), p.nic(1));  // a NIC per GPU on a DGX A100
  for (int64_t d : {2, 8, 65535, 131070})
    EXPECT_THROW(p.gpu(d), std::logic_error) << "device " << d;
  EXPECT_THROW(p.nic(8), std::logic_error);
}

}  // namespace
