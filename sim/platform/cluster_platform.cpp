#include "platform/cluster_platform.hpp"

#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/s4u.hpp>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

namespace dtsim::platform {

namespace sg4 = simgrid::s4u;
using sg4::LinkInRoute;

// NVSwitch: each device's one split-duplex link to the centre of a star.
sg4::NetZone* ClusterPlatform::build_switch_zone(const hardware::LinkSpec& nvl, const std::vector<int64_t>& built,
                                                sg4::NetZone* parent)
{
  auto* zone = sg4::create_star_zone("nodes");
  zone->set_parent(parent);
  for (int64_t d : built) {
    auto* host = zone->create_host("gpu" + std::to_string(d), kHostSpeed)->seal();
    auto* link = zone->create_split_duplex_link("nvlink" + std::to_string(d), nvl.goodput_Bps)->seal();
    ++links_;
    zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr, {{link, LinkInRoute::Direction::UP}}, true);
    gpus_[size_t(d)] = host;
  }
  nodes_gw_ = zone->create_router("nodes-gw");
  zone->add_route(nodes_gw_, nullptr, nullptr, nullptr, {}, true);
  return zone;
}

// A switchless domain (xGMI): one split-duplex link per pair of devices of a domain, each route one link. A full
// zone sizes its routing table on its first route, so every host and the gateway exist before any route; no flow
// enters or leaves the zone (across domains a device sends from its NIC host), so the gateway has no route.
sg4::NetZone* ClusterPlatform::build_mesh_zone(const hardware::LinkSpec& nvl, const parallel::Placement& placement,
                                              const std::vector<int64_t>& built, sg4::NetZone* parent)
{
  auto* zone = sg4::create_full_zone("nodes");
  zone->set_parent(parent);
  std::map<int64_t, std::vector<int64_t>> domains;
  for (int64_t d : built) {
    gpus_[size_t(d)] = zone->create_host("gpu" + std::to_string(d), kHostSpeed)->seal();
    domains[placement.domain_of(d)].push_back(d);
  }
  nodes_gw_ = zone->create_router("nodes-gw");
  for (const auto& [domain, members] : domains)
    for (size_t i = 0; i < members.size(); ++i)
      for (size_t j = i + 1; j < members.size(); ++j) {
        const int64_t a = members[i], b = members[j];
        auto* link = zone->create_split_duplex_link("xgmi" + std::to_string(a) + "-" + std::to_string(b),
                                                    nvl.goodput_Bps)->seal();
        ++links_;
        zone->add_route(gpus_[size_t(a)]->get_netpoint(), gpus_[size_t(b)]->get_netpoint(), nullptr, nullptr,
                        {{link, LinkInRoute::Direction::UP}}, true);
      }
  return zone;
}

ClusterPlatform::ClusterPlatform(const hardware::HardwareSpec& hw, const parallel::Placement& placement,
                                 const std::vector<int64_t>& needed)
    : layout_(hw, placement), gpus_(size_t(placement.devices())), nics_(size_t(layout_.nic_count())),
      nvlink_latency_s_(hw.scale_up.nvlink.latency_s), nic_latency_s_(hw.network.nic.latency_s)
{
  // The devices built, ascending: every one, or those listed.
  std::vector<int64_t> built = needed;
  for (int64_t d = 0; d < placement.devices() && needed.empty(); ++d)
    built.push_back(d);
  auto* root = sg4::create_star_zone("cluster");

  // Scale-up domains: NVSwitch as a star of per-GPU split-duplex links, or a switchless mesh of per-pair links.
  // All GPUs share one zone: GPUs only exchange data within their domain (across domains a device sends from its
  // NIC host), so the routes are those of one zone per domain, and SimGrid 3.32 looks every new host and link name
  // up zone by zone (Engine::link_by_name_or_null), which made one zone per node cost a quarter of a 3,072-GPU run.
  const auto& nvl = hw.scale_up.nvlink;
  auto* gpu_zone = hw.scale_up.full_mesh ? build_mesh_zone(nvl, placement, built, root)
                                         : build_switch_zone(nvl, built, root);
  gpu_zone->seal();
  root->add_route(gpu_zone->get_netpoint(), nullptr, nodes_gw_, nullptr, {}, true);

  // Fabric: NIC hosts grouped into leaf switches, leaves into pods, pods under a non-blocking core (FabricLayout);
  // only the NICs of needed devices are built.
  const auto& net = hw.network;
  // The NICs of the devices built, ascending, each once.
  std::vector<int64_t> built_nics;
  for (int64_t d : built)
    built_nics.push_back(layout_.nic_index(d));
  std::sort(built_nics.begin(), built_nics.end());
  built_nics.erase(std::unique(built_nics.begin(), built_nics.end()), built_nics.end());
  // Two levels: leaf zones in a star whose centre is the spine. Three levels: SimGrid 3.32 resolves a route from
  // a host to the gateway of a zone two levels above it inside that upper zone, with the host's id in its own zone
  // (NetZoneImpl::get_global_route_with_netzones, simgrid/simgrid issue #389): nested pod zones gave cross-pod
  // flows another leaf's uplink and no NIC links, or crashed. So pods are not zones: the fabric is a full zone of
  // leaf zones with one explicit route per pair of leaves, through both pod uplinks when the pods differ.
  const int levels = layout_.levels();
  auto* fabric = levels >= 3 ? sg4::create_full_zone("fabric") : sg4::create_star_zone("fabric");
  fabric->set_parent(root);
  const int64_t leaves = layout_.leaves();
  const int64_t leaves_per_pod = layout_.leaves_per_pod();
  const int64_t pod_count = layout_.pods();
  // Leaf zones and uplinks exist with two or three levels only: one switch has none (a frontier cluster's 4,096
  // leaves would be tables of nothing).
  const size_t leaf_tables = levels > 1 ? size_t(leaves) : 0;
  std::vector<sg4::NetZone*> leaf_zones(leaf_tables, nullptr);
  std::vector<simgrid::kernel::routing::NetPoint*> leaf_gw(leaf_tables, nullptr);
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
  for (int64_t i : built_nics) {
    auto* zone = single ? single : leaf_zones[size_t(layout_.leaf_of_nic(i))];
    auto* host = zone->create_host("nic" + std::to_string(i), kHostSpeed)->seal();
    auto* link = zone->create_split_duplex_link("niclink" + std::to_string(i), net.nic.goodput_Bps)->seal();
    ++links_;
    zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr, {{link, LinkInRoute::Direction::UP}}, true);
    nics_[size_t(i)] = host;
  }
  // Uplinks: a leaf's capacity towards the spine is its NICs' bandwidth divided by the oversubscription; a pod's
  // towards the core likewise.
  std::vector<sg4::Link*> leaf_up(leaf_tables, nullptr), pod_up(size_t(pod_count), nullptr);
  for (int64_t lf = 0; lf < leaves && levels > 1; ++lf) {
    leaf_zones[size_t(lf)]->seal();
    double bw = double(layout_.nics_in_leaf(lf)) * net.nic.goodput_Bps / net.oversubscription;
    leaf_up[size_t(lf)] = fabric->create_split_duplex_link("leafup" + std::to_string(lf), bw)->seal();
    ++links_;
  }
  for (int64_t p = 0; p < pod_count; ++p) {
    int64_t nics = 0;
    for (int64_t lf = p * leaves_per_pod; lf < std::min(leaves, (p + 1) * leaves_per_pod); ++lf)
      nics += layout_.nics_in_leaf(lf);
    double bw = double(nics) * net.nic.goodput_Bps / net.oversubscription;
    pod_up[size_t(p)] = fabric->create_split_duplex_link("podup" + std::to_string(p), bw)->seal();
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
  root->seal();
}

sg4::Host* ClusterPlatform::gpu(int64_t device) const
{
  auto* h = gpus_[size_t(device)];
  if (h == nullptr)
    throw std::logic_error("internal error: device " + std::to_string(device) + " was not built into the platform");
  return h;
}

sg4::Host* ClusterPlatform::nic(int64_t device) const
{
  auto* h = nics_[size_t(layout_.nic_index(device))];
  if (h == nullptr)
    throw std::logic_error("internal error: the NIC of device " + std::to_string(device) +
                           " was not built into the platform");
  return h;
}

}  // namespace dtsim::platform
