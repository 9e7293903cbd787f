#pragma once
/// Failure statistics of a large training job, the published basis of every kind of system's failure assumptions
/// (report/time_to_train.hpp).

namespace dtsim::systems::published_failures {

// Llama 3 405B pre-training (Dubey et al. 2024, "The Llama 3 Herd of Models", arXiv:2407.21783, Sec. 3.3.4):
// 419 unexpected interruptions in a 54-day snapshot on 16,384 H100 GPUs in 2,048 hosts of 8; "GPU issues are the
// largest category, accounting for 58.7% of all unexpected issues" (246 of them). The other 173 (network, host,
// software) are counted per host.
inline constexpr double kSnapshotS = 54 * 86400.0;
inline constexpr double kGpus = 16384, kHosts = 2048;
/// GPUs per host of that job: what one host's figures below were measured on.
inline constexpr double kGpusPerHost = kGpus / kHosts;
inline constexpr double kGpuFailures = 0.587 * 419, kHostFailures = 419 - kGpuFailures;
/// Each GPU: 16,384 x 54 days / 246 = 3,597 days (86,300 h).
inline constexpr double kGpuMtbfS = kGpus * kSnapshotS / kGpuFailures;
/// Each host of 8 GPUs, for what fails outside its GPUs: 2,048 x 54 days / 173 = 639 days (15,300 h).
inline constexpr double kHostMtbfS = kHosts * kSnapshotS / kHostFailures;
/// The same report's Tectonic storage sustains 2 TB/s for that cluster: 0.98 GB/s per host of 8 GPUs.
inline constexpr double kCheckpointBandwidthPerHost = 2e12 / kHosts;
/// From a failure to training again (detection, rescheduling on spare hosts, communicator set-up, reading the
/// checkpoint). Assumed: 10 minutes; the report gives no figure.
inline constexpr double kRestartS = 600;

}  // namespace dtsim::systems::published_failures
