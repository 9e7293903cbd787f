#include "platform/cluster_platform.hpp"

#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/s4u.hpp>

namespace dtsim::platform {

namespace sg4 = simgrid::s4u;
using sg4::LinkInRoute;

ClusterPlatform::ClusterPlatform(const hardware::HardwareSpec& hw, const parallel::Placement& placement)
    : placement_(placement), nics_per_node_(hw.network.nics_per_node), oversubscription_(hw.network.oversubscription)
{
  const int64_t per_node = placement.devices_per_node();
  const int64_t nodes = placement.nodes();
  auto* root = sg4::create_star_zone("cluster");

  // Nodes: NVSwitch as a star of per-GPU split-duplex links. All GPUs share one star zone: GPUs only exchange
  // data within their node (across nodes a device sends from its NIC host), so the routes are those of one star
  // zone per node, and SimGrid 3.32 looks every new host and link name up zone by zone (Engine::link_by_name_or_null),
  // which made one zone per node cost a quarter of a 3,072-GPU run.
  const auto& nvl = hw.node.nvlink;
  gpus_.resize(size_t(placement.devices()));
  auto* gpu_zone = sg4::create_star_zone("nodes");
  gpu_zone->set_parent(root);
  for (int64_t n = 0; n < nodes; ++n)
    for (int64_t l = 0; l < per_node && n * per_node + l < placement.devices(); ++l) {
      int64_t d = n * per_node + l;
      auto* host = gpu_zone->create_host("gpu" + std::to_string(d), kHostSpeed)->seal();
      auto* link = gpu_zone->create_split_duplex_link("nvlink" + std::to_string(d), nvl.goodput_Bps)
                       ->set_latency(nvl.latency_s / 2)
                       ->seal();
      ++links_;
      gpu_zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr, {{link, LinkInRoute::Direction::UP}},
                          true);
      gpus_[size_t(d)] = host;
    }
  auto* nodes_gw = gpu_zone->create_router("nodes-gw");
  gpu_zone->add_route(nodes_gw, nullptr, nullptr, nullptr, {}, true);
  gpu_zone->seal();
  root->add_route(gpu_zone->get_netpoint(), nullptr, nodes_gw, nullptr, {}, true);

  // Fabric: NIC hosts grouped into leaf switches, leaves into pods, pods under a non-blocking core.
  const auto& net = hw.network;
  const int64_t nic_count = nodes * net.nics_per_node;
  const int64_t group = std::max<int64_t>(1, net.switch_radix / 2);  // down ports of a switch
  auto leaf_of = [&](int64_t node, int64_t local) {
    if (net.topology == hardware::Topology::RailOptimized)  // a leaf holds one rail of `group` nodes
      return (node / group) * net.nics_per_node + local;
    return (node * net.nics_per_node + local) / group;
  };
  // Two levels: leaf zones in a star whose centre is the spine. Three levels: SimGrid 3.32 resolves a route from
  // a host to the gateway of a zone two levels above it inside that upper zone, with the host's id in its own zone
  // (NetZoneImpl::get_global_route_with_netzones, simgrid/simgrid issue #389): nested pod zones gave cross-pod
  // flows another leaf's uplink and no NIC links, or crashed. So pods are not zones: the fabric is a full zone of
  // leaf zones with one explicit route per pair of leaves, through both pod uplinks when the pods differ.
  // Uplinks that are not oversubscribed carry at least what the NICs below them can send, so max-min sharing never
  // finds them the bottleneck: the fabric is then built as one switch, which gives the same rates and builds far
  // faster (SimGrid 3.32 looks each new host and link name up zone by zone, and sealing a zone scans every host:
  // 512 leaf zones were 85% of a 16,384-GPU run).
  const int levels = net.oversubscription > 1 ? std::max(1, net.levels) : 1;
  auto* fabric = levels >= 3 ? sg4::create_full_zone("fabric") : sg4::create_star_zone("fabric");
  fabric->set_parent(root);
  const int64_t leaves = leaf_of(nodes - 1, net.nics_per_node - 1) + 1;
  const int64_t leaves_per_pod = group;
  const int64_t pod_count = levels >= 3 ? (leaves + leaves_per_pod - 1) / leaves_per_pod : 0;
  leaves_per_pod_ = levels >= 3 ? leaves_per_pod : 0;
  std::vector<sg4::NetZone*> leaf_zones(size_t(leaves), nullptr);
  std::vector<simgrid::kernel::routing::NetPoint*> leaf_gw(size_t(leaves), nullptr);
  std::vector<int64_t> leaf_nics(size_t(leaves), 0);
  for (int64_t n = 0; n < nodes; ++n)
    for (int64_t l = 0; l < net.nics_per_node; ++l)
      ++leaf_nics[size_t(leaf_of(n, l))];
  sg4::NetZone* single = levels == 1 ? fabric : nullptr;
  for (int64_t lf = 0; lf < leaves && levels > 1; ++lf) {
    auto* z = sg4::create_star_zone("leaf" + std::to_string(lf));
    z->set_parent(fabric);
    leaf_zones[size_t(lf)] = z;
    leaf_gw[size_t(lf)] = z->create_router("leaf" + std::to_string(lf) + "-gw");
    z->add_route(leaf_gw[size_t(lf)], nullptr, nullptr, nullptr, {}, true);
  }
  // A full zone sizes its routing table on the first route: every vertex must exist by then. The gateway only
  // attaches the fabric to the root: flows start and end at NICs, none enters or leaves the fabric (a full zone
  // has no route to it).
  auto* fabric_gw = fabric->create_router("fabric-gw");
  nics_.resize(size_t(nic_count));
  nic_leaf_.resize(size_t(nic_count));
  for (int64_t n = 0; n < nodes; ++n)
    for (int64_t l = 0; l < net.nics_per_node; ++l) {
      int64_t i = n * net.nics_per_node + l;
      auto* zone = single ? single : leaf_zones[size_t(leaf_of(n, l))];
      auto* host = zone->create_host("nic" + std::to_string(i), kHostSpeed)->seal();
      auto* link = zone->create_split_duplex_link("niclink" + std::to_string(i), net.nic.goodput_Bps)
                       ->set_latency(net.nic.latency_s / 2)
                       ->seal();
      ++links_;
      zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr, {{link, LinkInRoute::Direction::UP}}, true);
      nics_[size_t(i)] = host;
      nic_leaf_[size_t(i)] = leaf_of(n, l);
    }
  // Uplinks: a leaf's capacity towards the spine is its NICs' bandwidth divided by the oversubscription; a pod's
  // towards the core likewise.
  std::vector<sg4::Link*> leaf_up(size_t(leaves), nullptr), pod_up(size_t(pod_count), nullptr);
  for (int64_t lf = 0; lf < leaves && levels > 1; ++lf) {
    leaf_zones[size_t(lf)]->seal();
    double bw = double(leaf_nics[size_t(lf)]) * net.nic.goodput_Bps / net.oversubscription;
    leaf_up[size_t(lf)] = fabric->create_split_duplex_link("leafup" + std::to_string(lf), bw)->set_latency(0)->seal();
    ++links_;
  }
  for (int64_t p = 0; p < pod_count; ++p) {
    int64_t nics = 0;
    for (int64_t lf = p * leaves_per_pod; lf < std::min(leaves, (p + 1) * leaves_per_pod); ++lf)
      nics += leaf_nics[size_t(lf)];
    double bw = double(nics) * net.nic.goodput_Bps / net.oversubscription;
    pod_up[size_t(p)] = fabric->create_split_duplex_link("podup" + std::to_string(p), bw)->set_latency(0)->seal();
    ++links_;
  }
  using Dir = LinkInRoute::Direction;
  if (levels == 2)
    for (int64_t lf = 0; lf < leaves; ++lf)
      fabric->add_route(leaf_zones[size_t(lf)]->get_netpoint(), nullptr, leaf_gw[size_t(lf)], nullptr,
                        {{leaf_up[size_t(lf)], Dir::UP}}, true);
  for (int64_t a = 0; a < leaves && levels >= 3; ++a)
    for (int64_t b = a + 1; b < leaves; ++b) {
      const int64_t pa = a / leaves_per_pod, pb = b / leaves_per_pod;
      std::vector<LinkInRoute> route{{leaf_up[size_t(a)], Dir::UP}};
      if (pa != pb) {
        route.push_back({pod_up[size_t(pa)], Dir::UP});
        route.push_back({pod_up[size_t(pb)], Dir::DOWN});
      }
      route.push_back({leaf_up[size_t(b)], Dir::DOWN});
      fabric->add_route(leaf_zones[size_t(a)]->get_netpoint(), leaf_zones[size_t(b)]->get_netpoint(),
                        leaf_gw[size_t(a)], leaf_gw[size_t(b)], route, true);
    }
  if (levels < 3)
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

int64_t ClusterPlatform::nic_index(int64_t device) const
{
  int64_t per_node = placement_.devices_per_node();
  int64_t node = device / per_node, local = device % per_node;
  int64_t gpus_per_nic = per_node / nics_per_node_;
  return node * nics_per_node_ + local / gpus_per_nic;
}

sg4::Host* ClusterPlatform::nic(int64_t device) const
{
  return nics_[size_t(nic_index(device))];
}

bool ClusterPlatform::crosses_shared_link(int64_t a, int64_t b) const
{
  if (same_node(a, b))
    return false;
  if (placement_.devices_per_node() > nics_per_node_)
    return true;
  return oversubscription_ > 1 && nic_leaf_[size_t(nic_index(a))] != nic_leaf_[size_t(nic_index(b))];
}

}  // namespace dtsim::platform

namespace dtsim::platform {

std::vector<int64_t> ClusterPlatform::shared_links(int64_t a, int64_t b) const
{
  std::vector<int64_t> out;
  if (same_node(a, b))
    return out;
  // Ids: 4 per NIC (its link up and down, its leaf's uplink up and down), then 2 per pod.
  const int64_t na = nic_index(a), nb = nic_index(b);
  if (placement_.devices_per_node() > nics_per_node_) {
    out.push_back(4 * na);
    out.push_back(4 * nb + 1);
  }
  const int64_t la = nic_leaf_[size_t(na)], lb = nic_leaf_[size_t(nb)];
  if (oversubscription_ > 1 && la != lb) {
    const int64_t base = 4 * int64_t(nic_leaf_.size());
    out.push_back(4 * la + 2);
    out.push_back(4 * lb + 3);
    if (leaves_per_pod_ > 0 && la / leaves_per_pod_ != lb / leaves_per_pod_) {
      out.push_back(base + 2 * (la / leaves_per_pod_));
      out.push_back(base + 2 * (lb / leaves_per_pod_) + 1);
    }
  }
  return out;
}

}  // namespace dtsim::platform
