#pragma once
/// The SimGrid platform of a GPU cluster, built in code from the hardware description:
///  - a host per GPU, each with its own split-duplex NVLink link to its node's NVSwitch (one star zone holds all
///    GPUs: GPUs of different nodes never exchange data directly, so the zone's centre is only ever an NVSwitch);
///  - the NICs as hosts of leaf-switch zones under a spine (two levels: a star zone; three levels: a full zone with
///    a route per pair of leaves that crosses the pod uplinks when the pods differ), each switch group's
///    uplink a shared link whose capacity is its NICs' bandwidth over the oversubscription ratio
///    (a fluid view of a fat tree: ECMP spreads a group's traffic over its uplinks evenly);
///    a fabric without oversubscription is built as one switch (its uplinks could never be a bottleneck);
///  - a timer host (many cores) that runs latency delays without sharing anything.
/// Every route crosses exactly two NIC links (or two NVLink links), each with half the end-to-end latency, and
/// switch links have none, so all routes of a kind have the same latency: CM02 shares a bottleneck in
/// proportion to route latency, and uniform latencies keep that sharing fair (../shared/notes/simgrid-3.32.md).
#include <cstdint>
#include <vector>

#include "hardware/hardware_spec.hpp"
#include "parallel/placement.hpp"

namespace simgrid::s4u {
class Host;
}

namespace dtsim::platform {

/// Host speed used for timers and compute: activities are given seconds * kHostSpeed "flops".
constexpr double kHostSpeed = 1e9;

class ClusterPlatform {
 public:
  /// Builds zones, hosts and links into the current SimGrid engine.
  ClusterPlatform(const hardware::HardwareSpec& hw, const parallel::Placement& placement);

  simgrid::s4u::Host* gpu(int64_t device) const { return gpus_[size_t(device)]; }
  /// The NIC host that carries this device's inter-node traffic.
  simgrid::s4u::Host* nic(int64_t device) const;
  simgrid::s4u::Host* timer() const { return timer_; }
  /// Compute host of a device: a GPU's kernels run one at a time on it.
  bool same_node(int64_t a, int64_t b) const { return placement_.node_of(a) == placement_.node_of(b); }
  int64_t link_count() const { return links_; }
  /// Whether the route from device `a` to device `b` crosses a link that other devices' flows can load at the same
  /// time: a NIC that several GPUs send through, or an oversubscribed uplink (one that is not oversubscribed can
  /// never be the bottleneck: it carries at least what its NICs can). NVLink links and a NIC of its own are not.
  bool crosses_shared_link(int64_t a, int64_t b) const;
  /// Whether any link is shared in that sense (several GPUs per NIC, or oversubscribed uplinks).
  bool has_shared_links() const { return placement_.devices_per_node() > nics_per_node_ || oversubscription_ > 1; }
  /// The shared links (as above) that the route from `a` to `b` crosses, each direction a link id of its own.
  std::vector<int64_t> shared_links(int64_t a, int64_t b) const;

 private:
  int64_t nic_index(int64_t device) const;

  parallel::Placement placement_;
  int nics_per_node_;
  double oversubscription_ = 1;
  std::vector<int64_t> nic_leaf_;
  int64_t leaves_per_pod_ = 0;  ///< three levels only  ///< node * nics_per_node + local NIC -> its leaf switch
  std::vector<simgrid::s4u::Host*> gpus_;
  std::vector<simgrid::s4u::Host*> nics_;  ///< node * nics_per_node + local NIC
  simgrid::s4u::Host* timer_ = nullptr;
  int64_t links_ = 0;
};

}  // namespace dtsim::platform
