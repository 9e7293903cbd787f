#include "systems/gpu_cluster/failure_assumptions.hpp"

#include <algorithm>
#include <string>

#include "core/format_number.hpp"
#include "systems/published_failures.hpp"

namespace dtsim::systems {
namespace {

/// Hours to three significant figures with thousands separated, as the basis prints them: "30,700 h".
std::string hours(double s)
{
  return format_thousands(int64_t(std::stod(format_number("%.3g", s / 3600)))) + " h";
}

}  // namespace

report::FailureAssumptions gpu_failure_assumptions(const scenario::ScenarioSpec& s)
{
  namespace pf = published_failures;
  report::FailureAssumptions f;
  f.device_mtbf_s = pf::kGpuMtbfS;
  const int64_t per_host = std::max(1, s.hardware.node.devices);
  f.hosts = (s.devices + per_host - 1) / per_host;
  // The host figures were measured on hosts of 8 GPUs (kGpusPerHost): a host of another size takes them per GPU,
  // its failures outside the GPUs and its storage bandwidth in proportion to its GPUs. A GB200 or GB300 NVL72
  // tray of 4 GPUs thus fails half as often as an 8-GPU host and writes at half its bandwidth, as the same 8 GPUs
  // in two trays would. Assumed: no failure statistics of NVL72 racks are published; a tray has one NIC per GPU as
  // an H100 host has (hardware/gb200-nvl72.yaml), but two Grace CPUs per 4 GPUs where the host had two x86 CPUs
  // per 8, and the rack's NVLink switch trays and cables are not counted.
  const double host_share = double(per_host) / pf::kGpusPerHost;
  f.host_mtbf_s = pf::kHostMtbfS / host_share;
  f.checkpoint_bandwidth_per_host = pf::kCheckpointBandwidthPerHost * host_share;
  f.restart_s = pf::kRestartS;
  f.basis = "Llama 3 405B on 16,384 H100 (Dubey et al. 2024): GPU MTBF 86,300 h, host MTBF 15,300 h, 0.98 GB/s of "
            "checkpoint storage per host";
  if (per_host != int64_t(pf::kGpusPerHost))
    f.basis += " of 8 GPUs, taken per GPU (assumed): host MTBF " + hours(f.host_mtbf_s) + " and " +
               format_number("%.3g", f.checkpoint_bandwidth_per_host / 1e9) + " GB/s per host of " +
               std::to_string(per_host);
  f.basis += "; restart 10 min (assumed)";
  return f;
}

}  // namespace dtsim::systems
