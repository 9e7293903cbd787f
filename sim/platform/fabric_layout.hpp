#pragma once
/// Where each device of a GPU cluster sits in the network, computed from the hardware description alone (no SimGrid):
/// its scale-up domain, the NIC of its host it sends through across domains, that NIC's leaf switch and pod, and which
/// links other devices' traffic can load at the same time. The replay asks it which flows fold (replay/driver.cpp)
/// before any platform exists; ClusterPlatform builds its zones, hosts and links from it. For a job that shares the
/// cluster with others (the placement's place_on), domains, NICs and leaves are the cluster's.
#include <cstdint>
#include <vector>

#include "hardware/hardware_spec.hpp"
#include "parallel/placement.hpp"

namespace dtsim::platform {

class FabricLayout {
 public:
  FabricLayout(const hardware::HardwareSpec& hw, const parallel::Placement& placement);

  const parallel::Placement& placement() const { return placement_; }
  bool same_domain(int64_t a, int64_t b) const { return placement_.domain_of(a) == placement_.domain_of(b); }
  int64_t nic_count() const { return hosts_ * nics_per_node_; }
  /// The NIC (host * nics_per_node + local NIC) that carries this device's traffic to other domains.
  int64_t nic_index(int64_t device) const;
  /// Switch levels built: 1 (one switch) when the uplinks are not oversubscribed, else the hardware's.
  int levels() const { return levels_; }
  int64_t leaf_of_nic(int64_t nic) const;
  int64_t leaves() const { return leaf_of_nic(nic_count() - 1) + 1; }
  int64_t nics_in_leaf(int64_t leaf) const;
  int64_t leaves_per_pod() const { return leaves_per_pod_; }  ///< three levels only, else 0
  int64_t pods() const { return leaves_per_pod_ > 0 ? (leaves() + leaves_per_pod_ - 1) / leaves_per_pod_ : 0; }

  /// Whether the route from device `a` to device `b` crosses a link that other devices' flows can load at the same
  /// time: a NIC that several GPUs send through, or an oversubscribed uplink (one that is not oversubscribed can
  /// never be the bottleneck: it carries at least what its NICs can). NVLink links and a NIC of its own are not.
  bool crosses_shared_link(int64_t a, int64_t b) const;
  /// The shared links (as above) that the route from `a` to `b` crosses, each direction a link id of its own.
  std::vector<int64_t> shared_links(int64_t a, int64_t b) const;
  /// Whether any link is shared in that sense (several GPUs per NIC, or oversubscribed uplinks).
  bool has_shared_links() const { return gpus_per_nic_ > 1 || oversubscription_ > 1; }

 private:
  parallel::Placement placement_;
  int64_t nics_per_domain_ = 1;  ///< every host's NICs in the domain
  int64_t gpus_per_nic_ = 1;     ///< devices of a host that send through one of its NICs
  int levels_ = 1;
  double oversubscription_ = 1;
  int64_t leaves_per_pod_ = 0;
  // Leaves are computed from these rather than listed per NIC: a frontier cluster has 131,072 NICs.
  int64_t hosts_ = 1;          ///< every host of the cluster
  int64_t nics_per_node_ = 1;  ///< NICs per host
  int64_t group_ = 1;          ///< down ports of a switch
  bool rails_ = false;         ///< rail-optimized: a leaf per rail of `group_` hosts
};

}  // namespace dtsim::platform
