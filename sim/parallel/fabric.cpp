#include "parallel/fabric.hpp"

#include "parallel/placement.hpp"

namespace dtsim::collectives {

Fabric fabric_of(const scenario::ScenarioSpec& s)
{
  Fabric f;
  const auto& hw = s.hardware;
  f.nvlink_Bps = hw.scale_up.nvlink.goodput_Bps;
  f.nvlink_latency_s = hw.scale_up.nvlink.latency_s;
  f.nic_Bps = hw.network.nic.goodput_Bps;
  f.nic_latency_s = hw.network.nic.latency_s;
  f.nics_per_domain = hw.domain_nics();
  f.devices_per_domain = hw.domain_devices();
  f.nvswitch_generation = hw.scale_up.nvswitch_generation;
  f.nvls_enabled = hw.scale_up.nvls;
  f.full_mesh = hw.scale_up.full_mesh;
  f.choice.algorithm = !s.stack.collective_algorithm.empty() ? s.stack.collective_algorithm : hw.collectives.algorithm;
  f.choice.protocol = !s.stack.collective_protocol.empty() ? s.stack.collective_protocol : hw.collectives.protocol;
  f.nccl_version = s.stack.nccl_version;
  f.routes = parallel::FabricRoutes(hw);
  const auto& par = s.parallel;
  f.ecmp_slowdown = parallel::ecmp_ring_slowdown(
      hw, parallel::Placement(par.dp_cp(), par.tp, par.pp, hw.domain_devices()));
  return f;
}

}  // namespace dtsim::collectives
