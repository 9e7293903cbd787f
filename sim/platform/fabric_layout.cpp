#include "platform/fabric_layout.hpp"

#include <algorithm>

namespace dtsim::platform {

FabricLayout::FabricLayout(const hardware::HardwareSpec& hw, const parallel::Placement& placement)
    : placement_(placement),
      nics_per_domain_(hw.domain_nics()),
      gpus_per_nic_(hw.node.devices / std::max(1, hw.network.nics_per_node)),
      oversubscription_(hw.network.oversubscription)
{
  const auto& net = hw.network;
  // Uplinks that are not oversubscribed carry at least what the NICs below them can send, so max-min sharing never
  // finds them the bottleneck: the fabric is then one switch, which gives the same rates and builds far faster
  // (SimGrid 3.32 looks each new host and link name up zone by zone, and sealing a zone scans every host: 512 leaf
  // zones were 85% of a 16,384-GPU run).
  levels_ = net.oversubscription > 1 ? std::max(1, net.levels) : 1;
  group_ = std::max<int64_t>(1, net.switch_radix / 2);  // down ports of a switch
  leaves_per_pod_ = levels_ >= 3 ? group_ : 0;
  // NICs are numbered host by host (the hosts of a domain are consecutive); rails and leaves go by host, as the
  // cables do: a domain of several hosts changes which devices share NVLink, not how hosts are wired.
  hosts_ = placement.cluster_size() * hw.scale_up.nodes;  // a shared cluster's hosts: every NIC
  nics_per_node_ = net.nics_per_node;
  rails_ = net.topology == hardware::Topology::RailOptimized;
}

int64_t FabricLayout::leaf_of_nic(int64_t nic) const
{
  const int64_t host = nic / nics_per_node_, rail = nic % nics_per_node_;
  return rails_ ? (host / group_) * nics_per_node_ + rail  // one rail of group_ hosts
                : nic / group_;
}

int64_t FabricLayout::nics_in_leaf(int64_t leaf) const
{
  if (rails_) {  // rail `leaf % nics` of the hosts of group `leaf / nics`, the last group holding the hosts left
    const int64_t first_host = (leaf / nics_per_node_) * group_;
    return std::max<int64_t>(0, std::min(hosts_, first_host + group_) - first_host);
  }
  const int64_t first = leaf * group_;
  return std::max<int64_t>(0, std::min(nic_count(), first + group_) - first);
}

int64_t FabricLayout::nic_index(int64_t device) const
{
  // A job fills every device of its domains in turn (parallel::Placement).
  const int64_t position = device % placement_.devices_per_domain();
  return placement_.domain_of(device) * nics_per_domain_ + position / gpus_per_nic_;
}

bool FabricLayout::crosses_shared_link(int64_t a, int64_t b) const
{
  if (same_domain(a, b))
    return false;
  if (gpus_per_nic_ > 1)
    return true;
  return oversubscription_ > 1 && leaf_of_nic(nic_index(a)) != leaf_of_nic(nic_index(b));
}

std::vector<int64_t> FabricLayout::shared_links(int64_t a, int64_t b) const
{
  std::vector<int64_t> out;
  if (same_domain(a, b))
    return out;
  // Ids: 4 per NIC (its link up and down, its leaf's uplink up and down), then 2 per pod.
  const int64_t na = nic_index(a), nb = nic_index(b);
  if (gpus_per_nic_ > 1) {
    out.push_back(4 * na);
    out.push_back(4 * nb + 1);
  }
  const int64_t la = leaf_of_nic(na), lb = leaf_of_nic(nb);
  if (oversubscription_ > 1 && la != lb) {
    out.push_back(4 * la + 2);
    out.push_back(4 * lb + 3);
    if (leaves_per_pod_ > 0 && la / leaves_per_pod_ != lb / leaves_per_pod_) {
      const int64_t base = 4 * nic_count();
      out.push_back(base + 2 * (la / leaves_per_pod_));
      out.push_back(base + 2 * (lb / leaves_per_pod_) + 1);
    }
  }
  return out;
}

}  // namespace dtsim::platform
