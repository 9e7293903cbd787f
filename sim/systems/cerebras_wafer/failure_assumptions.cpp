#include "systems/cerebras_wafer/failure_assumptions.hpp"

#include "systems/published_failures.hpp"

namespace dtsim::systems {

report::FailureAssumptions wafer_failure_assumptions(const scenario::ScenarioSpec& s)
{
  // Cerebras publishes no failure statistics of CS-2 or CS-3 systems (none found in its papers, blogs or model
  // zoo). Assumed: one system fails as often as one 8-GPU host with its GPUs in the Llama 3 statistics (15,300 h
  // and 8 x 86,300 h: one failure in 6,330 h), and writes its share of the checkpoint from MemoryX at one such
  // host's storage bandwidth; the same restart.
  namespace pf = published_failures;
  report::FailureAssumptions f;
  f.device_mtbf_s = 1 / (1 / pf::kHostMtbfS + 8 / pf::kGpuMtbfS);
  f.host_mtbf_s = 0;
  f.hosts = s.devices;
  f.checkpoint_bandwidth_per_host = pf::kCheckpointBandwidthPerHost;
  f.restart_s = pf::kRestartS;
  f.basis = "assumed (no published CS-2/CS-3 failure statistics): each system fails as often as one 8-GPU host of "
            "the Llama 3 statistics (MTBF 6,330 h) and writes at its 0.98 GB/s; restart 10 min";
  return f;
}

}  // namespace dtsim::systems
