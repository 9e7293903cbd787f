#pragma once
/// The SimGrid platform of a GPU cluster, built in code from the hardware description:
///  - a host per GPU, each with its own split-duplex NVLink link to its node's NVSwitch (one star zone holds all
///    GPUs: GPUs of different nodes never exchange data directly, so the zone's centre is only ever an NVSwitch);
///  - the NICs as hosts of leaf-switch zones under a spine (two levels: a star zone; three levels: a full zone with
///    a route per pair of leaves that crosses the pod uplinks when the pods differ), each switch group's
///    uplink a shared link whose capacity is its NICs' bandwidth over the oversubscription ratio
///    (a fluid view of a fat tree: ECMP spreads a group's traffic over its uplinks evenly);
///    a fabric without oversubscription is built as one switch (its uplinks could never be a bottleneck).
/// Latency terms and closed-form times are SimGrid kernel timers (replay/activities.hpp), not hosts.
/// Every route crosses exactly two NIC links (or two NVLink links), each with half the end-to-end latency, and
/// switch links have none, so all routes of a kind have the same latency: CM02 shares a bottleneck in
/// proportion to route latency, and uniform latencies keep that sharing fair (../shared/notes/simgrid-3.32.md).
#include <cstdint>
#include <vector>

#include "hardware/hardware_spec.hpp"
#include "parallel/placement.hpp"
#include "platform/fabric_layout.hpp"

namespace simgrid::s4u {
class Host;
}

namespace dtsim::platform {

/// Host speed used for compute: activities are given seconds * kHostSpeed "flops".
constexpr double kHostSpeed = 1e9;

class ClusterPlatform {
 public:
  /// Builds zones, hosts and links into the current SimGrid engine: the hosts of the devices marked in `needed`
  /// (indexed by device; empty: every device) and their NICs. A folded replay touches few devices; building the
  /// others would cost most of a frontier-scale run.
  ClusterPlatform(const hardware::HardwareSpec& hw, const parallel::Placement& placement,
                  const std::vector<char>& needed = {});

  /// The host of a device, by its number in the placement the platform was built from (a shared cluster's own
  /// placement numbers every device of the cluster: parallel::Placement::cluster_device).
  simgrid::s4u::Host* gpu(int64_t device) const;
  /// The NIC host that carries this device's inter-node traffic.
  simgrid::s4u::Host* nic(int64_t device) const;
  bool same_node(int64_t a, int64_t b) const { return layout_.same_node(a, b); }
  int64_t link_count() const { return links_; }

 private:
  FabricLayout layout_;
  std::vector<simgrid::s4u::Host*> gpus_;  ///< nullptr where not built
  std::vector<simgrid::s4u::Host*> nics_;  ///< node * nics_per_node + local NIC; nullptr where not built
  int64_t links_ = 0;
};

}  // namespace dtsim::platform
