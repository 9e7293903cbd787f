#pragma once
/// The costs of a multi-tier switch fabric that grow with scale, from the hardware's fabric section alone (no
/// SimGrid): how many switches a group's traffic crosses, whose port-to-port latency each network step of a
/// collective pays, and, under static ECMP routing, how much the most loaded uplink slows the flows that cross a
/// tier (docs/calibration.md, "Fabric: switch tiers and routing").
///
/// NICs and leaves are numbered as platform::FabricLayout numbers them (NICs host by host, leaves by NIC order or by
/// rail), but over the switch levels the hardware file gives: the platform builds a fabric without oversubscription
/// as one switch, since its uplinks cannot be the bottleneck under adaptive routing, while its packets still cross
/// every tier. tests/unit/fabric_routes_test.cpp checks the two numberings agree.
#include <cstdint>
#include <vector>

#include "hardware/hardware_spec.hpp"
#include "parallel/placement.hpp"

namespace dtsim::parallel {

class FabricRoutes {
 public:
  FabricRoutes() = default;
  explicit FabricRoutes(const hardware::HardwareSpec& hw);

  /// The NIC (host * nics_per_node + local NIC) that carries the device's traffic to other domains.
  int64_t nic_of(int64_t device, const Placement& placement) const;
  int64_t leaf_of_nic(int64_t nic) const;
  /// The pod (the leaves under one set of spines) of a leaf; three levels only, else 0.
  int64_t pod_of_leaf(int64_t leaf) const { return levels_ >= 3 ? leaf / group_ : 0; }
  /// Switches on the route between two devices' NICs: 1 within a leaf, 3 through a spine, 5 through a core (no more
  /// than 2 levels - 1 of them); 0 within a scale-up domain.
  int switches_between(int64_t a, int64_t b, const Placement& placement) const;
  /// The most switches a route between two members of `group` crosses.
  int switches_spanned(const std::vector<int64_t>& group, const Placement& placement) const;
  /// The same for evenly spaced ranks; without listing them where each sits at the same place of its own domain.
  int switches_spanned(const StridedGroup& group, const Placement& placement) const;
  /// The same for the group of every device of the job (devices 0..n-1), without listing them.
  int switches_spanned_by_every_device(const Placement& placement) const;
  /// Uplinks of a leaf (its down ports over the oversubscription), each of one NIC's bandwidth.
  int64_t uplinks_per_leaf() const { return uplinks_; }
  double switch_latency_s() const { return switch_latency_s_; }

 private:
  int levels_ = 1;
  int64_t group_ = 1;           ///< down ports of a switch
  int64_t uplinks_ = 1;         ///< up ports of a leaf
  int64_t nics_per_node_ = 1;
  int64_t nics_per_domain_ = 1;
  int64_t gpus_per_nic_ = 1;
  bool rails_ = false;
  double switch_latency_s_ = 0;
};

/// Flows a device's ring connection opens through its NIC: connect.cc doubles the ring graph's one channel per NIC
/// (collectives/channel_caps.hpp), and each channel's connection is split over NCCL_IB_QPS_PER_CONNECTION queue pairs,
/// which a switch hashes apart (Meta, "RDMA over Ethernet for Distributed AI Training at Meta Scale", SIGCOMM 2024,
/// raised it to spread its flows).
int flows_per_ring_connection(const hardware::NetworkSpec& net);

/// Static ECMP's slowdown of the flows that cross a leaf's uplinks, by simulation: every device's data-parallel ring
/// flow to its successor (every data-parallel group at once, as the gradient reduce-scatters of a step run) is split
/// into flows_per_ring_connection flows, each placed on an uplink of its source leaf and a downlink into its
/// destination leaf by a hash of (seed, source NIC, destination NIC, flow); a flow on a link of L flows runs at the
/// link's bandwidth over L, or at its NIC's share if that is less. The answer is the largest ratio, over every loaded
/// link, of the rate the fluid fabric (the leaf's uplinks as one pool, as the platform builds it) gives a flow to the
/// rate the hashed link gives it: the ring waits for its slowest flow. 1 under adaptive routing, or when no ring flow
/// crosses a leaf.
double ecmp_ring_slowdown(const hardware::HardwareSpec& hw, const Placement& placement);

}  // namespace dtsim::parallel
