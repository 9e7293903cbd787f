#pragma once
/// The SimGrid platform of a GPU cluster, built in code from the hardware description:
///  - a host per GPU, each with its own split-duplex NVLink link to its node's NVSwitch (one star zone holds all
///    GPUs: GPUs of different nodes never exchange data directly, so the zone's centre is only ever an NVSwitch);
///  - the NICs as hosts of leaf-switch zones under a spine (two levels: a star zone; three levels: a full zone with
///    a route per pair of leaves that crosses the pod uplinks when the pods differ), each switch group's
///    uplink a shared link whose capacity is its NICs' bandwidth over the oversubscription ratio
///    (a fluid view of a fat tree: adaptive routing spreads a group's traffic over its uplinks evenly; static ECMP's
///    collisions and the switches' latency are priced on the collectives' phases, parallel/fabric_routes.hpp);
///    a fabric without oversubscription is built as one switch (its uplinks could never be a bottleneck).
/// Latency terms and closed-form times are SimGrid kernel timers (replay/activities.hpp), not hosts.
/// Links carry no latency: the replay waits a route's latency (route_latency) with a timer before the flow sends
/// (Activities::flow). SimGrid 3.32's lazy max-min update marks only the first link of a comm whose latency has
/// been paid as modified, and nothing more when that link already is (System::update_modified_cnst_set, reached
/// from System::enable_var): the other flows on its other links kept their old rates. Seen on a NeMo Llama 2 70B
/// step: a 160 MB flow kept its whole NIC while a 16 MB flow joined its link at half rate, ending 0.35 ms early
/// (the same step with SimGrid's full update, network/optim:Full, agreed with the timers to 1e-14). A comm of no
/// latency is solved on every link it crosses (System::expand). All flows on a link have the same route latency
/// (two NVLink links or two NIC links, switch links none), so CM02's sharing in proportion to route latency was
/// plain max-min, as it is without latencies.
#include <cstdint>
#include <vector>

#include "hardware/hardware_spec.hpp"
#include "parallel/placement.hpp"
#include "platform/fabric_layout.hpp"
#include "platform/host_table.hpp"

namespace simgrid::kernel::routing {
class NetPoint;
}
namespace simgrid::s4u {
class Host;
class NetZone;
}

namespace dtsim::platform {

/// Host speed used for compute: activities are given seconds * kHostSpeed "flops".
constexpr double kHostSpeed = 1e9;

class ClusterPlatform {
 public:
  /// Builds zones, hosts and links into the current SimGrid engine: the hosts of the devices listed in `needed`
  /// (ascending, each once; empty: every device) and their NICs. A folded replay touches few devices; building the
  /// others would cost most of a frontier-scale run.
  ClusterPlatform(const hardware::HardwareSpec& hw, const parallel::Placement& placement,
                  const std::vector<int64_t>& needed = {});

  /// The host of a device, by its number in the placement the platform was built from (a shared cluster's own
  /// placement numbers every device of the cluster: parallel::Placement::cluster_device).
  simgrid::s4u::Host* gpu(int64_t device) const;
  /// The NIC host that carries this device's inter-node traffic.
  simgrid::s4u::Host* nic(int64_t device) const;
  bool same_domain(int64_t a, int64_t b) const { return layout_.same_domain(a, b); }
  /// The latency of a route between two devices of a node (NVLink), or between two NICs.
  double route_latency(bool within_node) const { return within_node ? nvlink_latency_s_ : nic_latency_s_; }
  int64_t link_count() const { return links_; }

 private:
  /// The zone of the scale-up domains' devices `built` (ascending) under `parent`, with its gateway in nodes_gw_.
  simgrid::s4u::NetZone* build_switch_zone(const hardware::LinkSpec& nvl, const std::vector<int64_t>& built,
                                           simgrid::s4u::NetZone* parent);
  simgrid::s4u::NetZone* build_mesh_zone(const hardware::LinkSpec& nvl, const parallel::Placement& placement,
                                         const std::vector<int64_t>& built, simgrid::s4u::NetZone* parent);

  FabricLayout layout_;
  simgrid::kernel::routing::NetPoint* nodes_gw_ = nullptr;
  // Tables over the cluster's devices and NICs, not lists of those built: the replay asks for hosts at every flow
  // (a sorted list's search cost 4% of the Megatron 1T step). Their untouched pages cost nothing (HostTable).
  HostTable gpus_;  ///< nullptr where not built
  HostTable nics_;  ///< node * nics_per_node + local NIC; nullptr where not built
  int64_t links_ = 0;
  double nvlink_latency_s_ = 0, nic_latency_s_ = 0;
};

}  // namespace dtsim::platform
