#include "systems/gpu_cluster/failure_assumptions.hpp"

#include <algorithm>

#include "systems/published_failures.hpp"

namespace dtsim::systems {

report::FailureAssumptions gpu_failure_assumptions(const scenario::ScenarioSpec& s)
{
  namespace pf = published_failures;
  report::FailureAssumptions f;
  f.device_mtbf_s = pf::kGpuMtbfS;
  f.host_mtbf_s = pf::kHostMtbfS;
  const int64_t per_host = std::max(1, s.hardware.node.devices);
  f.hosts = (s.devices + per_host - 1) / per_host;
  f.checkpoint_bandwidth_per_host = pf::kCheckpointBandwidthPerHost;
  f.restart_s = pf::kRestartS;
  f.basis = "Llama 3 405B on 16,384 H100 (Dubey et al. 2024): GPU MTBF 86,300 h, host MTBF 15,300 h, 0.98 GB/s of "
            "checkpoint storage per host; restart 10 min (assumed)";
  return f;
}

}  // namespace dtsim::systems
