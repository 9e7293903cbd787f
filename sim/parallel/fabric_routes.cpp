#include "parallel/fabric_routes.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace dtsim::parallel {

FabricRoutes::FabricRoutes(const hardware::HardwareSpec& hw)
{
  const auto& net = hw.network;
  levels_ = std::max(1, net.levels);
  group_ = std::max<int64_t>(1, net.switch_radix / 2);
  uplinks_ = std::max<int64_t>(1, int64_t(std::ceil(double(group_) / std::max(1.0, net.oversubscription))));
  nics_per_node_ = std::max(1, net.nics_per_node);
  nics_per_domain_ = hw.domain_nics();
  gpus_per_nic_ = std::max<int64_t>(1, hw.node.devices / nics_per_node_);
  rails_ = net.topology == hardware::Topology::RailOptimized;
  switch_latency_s_ = net.switch_latency_s;
}

int64_t FabricRoutes::nic_of(int64_t device, const Placement& placement) const
{
  const int64_t position = device % placement.devices_per_domain();
  return placement.domain_of(device) * nics_per_domain_ + position / gpus_per_nic_;
}

int64_t FabricRoutes::leaf_of_nic(int64_t nic) const
{
  const int64_t host = nic / nics_per_node_, rail = nic % nics_per_node_;
  return rails_ ? (host / group_) * nics_per_node_ + rail : nic / group_;
}

int FabricRoutes::switches_between(int64_t a, int64_t b, const Placement& placement) const
{
  return switches_spanned(std::vector<int64_t>{a, b}, placement);
}

int FabricRoutes::switches_spanned(const std::vector<int64_t>& group, const Placement& placement) const
{
  // Every route leaves from a leaf: the group spans one leaf, one pod, or more.
  if (group.size() < 2)
    return 0;
  bool one_domain = true, one_leaf = true, one_pod = true;
  const int64_t domain = placement.domain_of(group.front());
  const int64_t leaf = leaf_of_nic(nic_of(group.front(), placement));
  for (int64_t d : group) {
    if (placement.domain_of(d) == domain)
      continue;
    one_domain = false;
    const int64_t l = leaf_of_nic(nic_of(d, placement));
    one_leaf = one_leaf && l == leaf;
    one_pod = one_pod && pod_of_leaf(l) == pod_of_leaf(leaf);
  }
  if (one_domain)
    return 0;
  if (levels_ == 1 || one_leaf)
    return 1;
  return levels_ >= 3 && !one_pod ? 5 : 3;
}

int FabricRoutes::switches_spanned(const StridedGroup& group, const Placement& placement) const
{
  if (group.count < 2)
    return 0;
  // Each member at the same place of its own domain (a stride of whole domains) uses the same NIC of its domain, so
  // its NIC, leaf and pod never decrease along the group (a rail's leaf too, where a domain holds whole nodes): the
  // first and the last member decide whether it spans one leaf, one pod, or more.
  const bool same_place = group.stride > 0 && group.stride % placement.devices_per_domain() == 0;
  if (!same_place || (rails_ && nics_per_domain_ % nics_per_node_ != 0))
    return switches_spanned(group.list(), placement);
  const int64_t first = leaf_of_nic(nic_of(group.first, placement));
  const int64_t last = leaf_of_nic(nic_of(group.last(), placement));
  if (levels_ == 1 || first == last)
    return 1;
  return levels_ >= 3 && pod_of_leaf(first) != pod_of_leaf(last) ? 5 : 3;
}

int FabricRoutes::switches_spanned_by_every_device(const Placement& placement) const
{
  // As the listed group's rule: the leaves of the members outside device 0's domain, against device 0's (leaf 0,
  // pod 0). Leaves grow with the host for a given rail, and with the rail within a host, so the highest leaf of NICs
  // 0..last is the last NIC's or, on rails, the previous host's last NIC's; pods grow with the leaf.
  const int64_t n = placement.devices();
  if (n < 2 || placement.domain_of(n - 1) == placement.domain_of(0))
    return 0;
  const int64_t last = nic_of(n - 1, placement);
  int64_t top = leaf_of_nic(last);
  const int64_t previous_host_last = (last / nics_per_node_) * nics_per_node_ - 1;
  if (previous_host_last >= nics_per_domain_)  // a NIC outside domain 0
    top = std::max(top, leaf_of_nic(previous_host_last));
  if (levels_ == 1 || top == leaf_of_nic(nic_of(0, placement)))
    return 1;
  return levels_ >= 3 && pod_of_leaf(top) != 0 ? 5 : 3;
}

int flows_per_ring_connection(const hardware::NetworkSpec& net)
{
  return 2 * std::max(1, net.qps_per_connection);
}

namespace {

// SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014): a switch's hash
// stands in as a well-mixed function of the flow's header.
uint64_t mix(uint64_t x)
{
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t flow_hash(uint64_t seed, int64_t src, int64_t dst, int64_t flow, uint64_t salt)
{
  return mix(mix(mix(mix(seed ^ salt) ^ uint64_t(src)) ^ uint64_t(dst)) ^ uint64_t(flow));
}

}  // namespace

double ecmp_ring_slowdown(const hardware::HardwareSpec& hw, const Placement& placement)
{
  const auto& net = hw.network;
  if (net.routing != hardware::Routing::StaticEcmp || placement.dp() < 2 || net.levels < 2)
    return 1.0;
  const FabricRoutes routes(hw);
  const int64_t flows = flows_per_ring_connection(net);
  const int64_t uplinks = routes.uplinks_per_leaf();
  const int64_t gpus_per_nic = std::max<int64_t>(1, hw.node.devices / std::max(1, net.nics_per_node));
  // Loads per (leaf, spine port): up from the leaf, down into it; and each leaf's flows out and in.
  std::unordered_map<int64_t, int64_t> up, down, out_of_leaf, into_leaf;
  for (int64_t d = 0; d < placement.devices(); ++d) {
    Coord c = placement.coord(d);
    c.dp = (c.dp + 1) % placement.dp();
    const int64_t next = placement.device(c);
    if (placement.domain_of(d) == placement.domain_of(next))
      continue;
    const int64_t src = routes.nic_of(d, placement), dst = routes.nic_of(next, placement);
    const int64_t ls = routes.leaf_of_nic(src), ld = routes.leaf_of_nic(dst);
    if (ls == ld)
      continue;
    for (int64_t k = 0; k < flows; ++k) {
      const int64_t port_up = int64_t(flow_hash(uint64_t(net.hash_seed), src, dst, k, 1) % uint64_t(uplinks));
      // Within a pod the spine the flow went up to is the one it comes down from; across pods a core hashes it
      // again onto a spine of the destination's pod.
      const bool same_pod = routes.pod_of_leaf(ls) == routes.pod_of_leaf(ld);
      const int64_t port_down =
          same_pod ? port_up : int64_t(flow_hash(uint64_t(net.hash_seed), src, dst, k, 2) % uint64_t(uplinks));
      ++up[ls * uplinks + port_up];
      ++down[ld * uplinks + port_down];
      ++out_of_leaf[ls];
      ++into_leaf[ld];
    }
  }
  // Rates in units of one port's (one NIC's) bandwidth. A flow's NIC share: the NIC's devices' ring flows together.
  const double nic_share = 1.0 / double(flows * gpus_per_nic);
  const double pool = double(uplinks);  // the leaf's uplinks as one pool, as the platform builds them
  double worst = 1.0;
  auto check = [&](const std::unordered_map<int64_t, int64_t>& loads,
                   const std::unordered_map<int64_t, int64_t>& per_leaf) {
    for (const auto& [link, load] : loads) {
      const double fluid = std::min(nic_share, pool / double(per_leaf.at(link / uplinks)));
      const double hashed = std::min(nic_share, 1.0 / double(load));
      worst = std::max(worst, fluid / hashed);
    }
  };
  check(up, out_of_leaf);
  check(down, into_leaf);
  return worst;
}

}  // namespace dtsim::parallel
