#pragma once
/// The links a scenario's collectives run on, as the collective model sees them: each link's goodput and route
/// latency, how many NICs and devices a scale-up domain has, what the hardware or stack forces, and the switch tiers.
/// It keeps the namespace of the algorithm catalog it feeds (sim/collectives), as parallel/collective.hpp does.
#include <algorithm>
#include <cstdint>

#include "collectives/algorithm_registry.hpp"
#include "parallel/fabric_routes.hpp"
#include "scenario/scenario_spec.hpp"

namespace dtsim::collectives {

/// The links collectives run on, and what the hardware or stack forces.
struct Fabric {
  double nvlink_Bps = 0;         ///< goodput of a device's NVLink, per direction
  double nvlink_latency_s = 0;   ///< route latency between two devices of a scale-up domain
  double nic_Bps = 0;            ///< goodput of a NIC, per direction
  double nic_latency_s = 0;      ///< route latency between two NICs
  int64_t nics_per_domain = 1, devices_per_domain = 1;  ///< of one scale-up (NVLink) domain
  int nvswitch_generation = 0;
  bool nvls_enabled = true;  ///< false where the hardware turns NVLS off (hardware::ScaleUpSpec::nvls)
  /// No switch: `nvlink_Bps` is one per-pair link of a mesh (hardware::ScaleUpSpec::full_mesh)
  bool full_mesh = false;
  CollectiveChoice choice;
  int nccl_version = 0;  ///< the stack's NCCL (GroupShape::nccl_version)
  /// The switch tiers a group's traffic crosses: each network step pays the switch latency per switch beyond the
  /// first (NCCL's per-step network latency stands for a route through one switch).
  parallel::FabricRoutes routes;
  /// Static ECMP: the factor the most loaded uplink stretches the flows that cross a leaf by (1: adaptive routing).
  double ecmp_slowdown = 1;

  /// Per direction, what one device sends at once to `peers` other devices of its domain: its one link to the
  /// switch, or on a mesh one link per peer (hardware::ScaleUpSpec::device_Bps, at the fabric's goodput).
  double device_nvlink_Bps(int64_t peers) const
  {
    return full_mesh ? nvlink_Bps * double(std::max<int64_t>(1, peers)) : nvlink_Bps;
  }
};

/// The fabric of a scenario: its hardware's links at their goodput (times the stack's communication factor, which
/// set_stack_factors folds into the goodputs) and the algorithm and protocol the stack, else the hardware, forces.
Fabric fabric_of(const scenario::ScenarioSpec& s);

}  // namespace dtsim::collectives
