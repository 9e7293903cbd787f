#include "platform/cluster_platform.hpp"

#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/s4u.hpp>

namespace dtsim::platform {

namespace sg4 = simgrid::s4u;
using sg4::LinkInRoute;

ClusterPlatform::ClusterPlatform(const hardware::HardwareSpec& hw, const parallel::Placement& placement)
    : placement_(placement), nics_per_node_(hw.network.nics_per_node)
{
  const int64_t per_node = placement.devices_per_node();
  const int64_t nodes = placement.nodes();
  auto* root = sg4::create_star_zone("cluster");

  // Nodes: NVSwitch as a star of per-GPU split-duplex links.
  const auto& nvl = hw.node.nvlink;
  gpus_.resize(size_t(placement.devices()));
  for (int64_t n = 0; n < nodes; ++n) {
    auto* zone = sg4::create_star_zone("node" + std::to_string(n));
    zone->set_parent(root);
    for (int64_t l = 0; l < per_node && n * per_node + l < placement.devices(); ++l) {
      int64_t d = n * per_node + l;
      auto* host = zone->create_host("gpu" + std::to_string(d), kHostSpeed)->seal();
      auto* link = zone->create_split_duplex_link("nvlink" + std::to_string(d), nvl.effective_bw_Bps())
                       ->set_latency(nvl.latency_s / 2)
                       ->seal();
      ++links_;
      zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr, {{link, LinkInRoute::Direction::UP}}, true);
      gpus_[size_t(d)] = host;
    }
    auto* gw = zone->create_router("node" + std::to_string(n) + "-gw");
    zone->add_route(gw, nullptr, nullptr, nullptr, {}, true);
    zone->seal();
    root->add_route(zone->get_netpoint(), nullptr, gw, nullptr, {}, true);
  }

  // Fabric: NIC hosts grouped into leaf switches, leaves into pods, pods under a non-blocking core.
  const auto& net = hw.network;
  const int64_t nic_count = nodes * net.nics_per_node;
  const int64_t group = std::max<int64_t>(1, net.switch_radix / 2);  // down ports of a switch
  auto leaf_of = [&](int64_t node, int64_t local) {
    if (net.topology == hardware::Topology::RailOptimized)  // a leaf holds one rail of `group` nodes
      return (node / group) * net.nics_per_node + local;
    return (node * net.nics_per_node + local) / group;
  };
  auto* fabric = sg4::create_star_zone("fabric");
  fabric->set_parent(root);
  const int levels = std::max(1, net.levels);
  const int64_t leaves = leaf_of(nodes - 1, net.nics_per_node - 1) + 1;
  std::vector<sg4::NetZone*> pods;
  std::vector<simgrid::kernel::routing::NetPoint*> pod_gw;
  const int64_t leaves_per_pod = group;
  const int64_t pod_count = levels >= 3 ? (leaves + leaves_per_pod - 1) / leaves_per_pod : 0;
  // A zone holding both child zones and a router as its gateway is routed wrongly by SimGrid 3.32: a route from a
  // host two zones down to that router is resolved inside the zone itself, with the host's id standing for one of
  // the child zones (a wrong uplink, or "unordered_map::at" when no child has that id). The gateway of such a zone
  // therefore sits alone in a child zone of its own.
  auto gateway_in_own_zone = [](sg4::NetZone* zone, const std::string& name) {
    auto* gz = sg4::create_star_zone(name + "-zone");
    gz->set_parent(zone);
    auto* gw = gz->create_router(name);
    gz->add_route(gw, nullptr, nullptr, nullptr, {}, true);
    gz->seal();
    zone->add_route(gz->get_netpoint(), nullptr, gw, nullptr, {}, true);
    return gw;
  };
  for (int64_t p = 0; p < pod_count; ++p) {
    auto* pod = sg4::create_star_zone("pod" + std::to_string(p));
    pod->set_parent(fabric);
    pods.push_back(pod);
    pod_gw.push_back(gateway_in_own_zone(pod, "pod" + std::to_string(p) + "-gw"));
  }
  std::vector<sg4::NetZone*> leaf_zones(size_t(leaves), nullptr);
  std::vector<simgrid::kernel::routing::NetPoint*> leaf_gw(size_t(leaves), nullptr);
  std::vector<int64_t> leaf_nics(size_t(leaves), 0);
  for (int64_t n = 0; n < nodes; ++n)
    for (int64_t l = 0; l < net.nics_per_node; ++l)
      ++leaf_nics[size_t(leaf_of(n, l))];
  sg4::NetZone* single = levels == 1 ? fabric : nullptr;
  for (int64_t lf = 0; lf < leaves && levels > 1; ++lf) {
    auto* parent = levels >= 3 ? pods[size_t(lf / leaves_per_pod)] : fabric;
    auto* z = sg4::create_star_zone("leaf" + std::to_string(lf));
    z->set_parent(parent);
    leaf_zones[size_t(lf)] = z;
    leaf_gw[size_t(lf)] = z->create_router("leaf" + std::to_string(lf) + "-gw");
    z->add_route(leaf_gw[size_t(lf)], nullptr, nullptr, nullptr, {}, true);
  }
  nics_.resize(size_t(nic_count));
  for (int64_t n = 0; n < nodes; ++n)
    for (int64_t l = 0; l < net.nics_per_node; ++l) {
      int64_t i = n * net.nics_per_node + l;
      auto* zone = single ? single : leaf_zones[size_t(leaf_of(n, l))];
      auto* host = zone->create_host("nic" + std::to_string(i), kHostSpeed)->seal();
      auto* link = zone->create_split_duplex_link("niclink" + std::to_string(i), net.nic.effective_bw_Bps())
                       ->set_latency(net.nic.latency_s / 2)
                       ->seal();
      ++links_;
      zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr, {{link, LinkInRoute::Direction::UP}}, true);
      nics_[size_t(i)] = host;
    }
  // Uplinks: a leaf's capacity towards the spine is its NICs' bandwidth divided by the oversubscription.
  for (int64_t lf = 0; lf < leaves && levels > 1; ++lf) {
    leaf_zones[size_t(lf)]->seal();
    double bw = double(leaf_nics[size_t(lf)]) * net.nic.effective_bw_Bps() / net.oversubscription;
    auto* parent = levels >= 3 ? pods[size_t(lf / leaves_per_pod)] : fabric;
    auto* up = parent->create_split_duplex_link("leafup" + std::to_string(lf), bw)->set_latency(0)->seal();
    ++links_;
    parent->add_route(leaf_zones[size_t(lf)]->get_netpoint(), nullptr, leaf_gw[size_t(lf)], nullptr,
                      {{up, LinkInRoute::Direction::UP}}, true);
  }
  for (int64_t p = 0; p < pod_count; ++p) {
    pods[size_t(p)]->seal();
    int64_t nics = 0;
    for (int64_t lf = p * leaves_per_pod; lf < std::min(leaves, (p + 1) * leaves_per_pod); ++lf)
      nics += leaf_nics[size_t(lf)];
    double bw = double(nics) * net.nic.effective_bw_Bps() / net.oversubscription;
    auto* up = fabric->create_split_duplex_link("podup" + std::to_string(p), bw)->set_latency(0)->seal();
    ++links_;
    fabric->add_route(pods[size_t(p)]->get_netpoint(), nullptr, pod_gw[size_t(p)], nullptr,
                      {{up, LinkInRoute::Direction::UP}}, true);
  }
  auto* fabric_gw = levels > 1 ? gateway_in_own_zone(fabric, "fabric-gw") : fabric->create_router("fabric-gw");
  if (levels == 1)  // the fabric holds NIC hosts only: its router may sit beside them
    fabric->add_route(fabric_gw, nullptr, nullptr, nullptr, {}, true);
  fabric->seal();
  root->add_route(fabric->get_netpoint(), nullptr, fabric_gw, nullptr, {}, true);

  // Timers: latency terms are delays, run on a host with enough cores that they never share.
  auto* tz = sg4::create_star_zone("timers");
  tz->set_parent(root);
  timer_ = tz->create_host("timer", kHostSpeed)->set_core_count(1 << 20)->seal();
  auto* tgw = tz->create_router("timers-gw");
  tz->add_route(timer_->get_netpoint(), nullptr, nullptr, nullptr, {}, true);
  tz->add_route(tgw, nullptr, nullptr, nullptr, {}, true);
  tz->seal();
  root->add_route(tz->get_netpoint(), nullptr, tgw, nullptr, {}, true);
  root->seal();
}

sg4::Host* ClusterPlatform::nic(int64_t device) const
{
  int64_t per_node = placement_.devices_per_node();
  int64_t node = device / per_node, local = device % per_node;
  int64_t gpus_per_nic = per_node / nics_per_node_;
  return nics_[size_t(node * nics_per_node_ + local / gpus_per_nic)];
}

}  // namespace dtsim::platform
