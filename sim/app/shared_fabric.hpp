#pragma once
/// `dtsim run JOB1.yaml JOB2.yaml ... --shared-fabric`: several training jobs placed on one cluster, each on nodes
/// of its own (packed: consecutive nodes; spread: nodes dealt to the jobs in turn), replayed together on the same
/// links (replay/shared_fabric.hpp), each also alone on the same nodes; the report gives each job's step time alone
/// and shared. The cluster is the jobs' hardware, which must be the same for all, with as many nodes as they take.
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace dtsim::app {

struct SharedFabricOptions {
  std::vector<std::string> scenarios;
  std::vector<std::string> sets;      ///< --set overrides, applied to every job
  std::string placement = "packed";   ///< packed or spread
  int64_t min_steps = 3;              ///< steps every job runs in the shared replay, at least
  bool stagger = false;               ///< job j starts j / n of its own alone step late (out of phase)
  std::string format = "table";
  int jobs = 2;                       ///< child processes at a time
};

/// Simulates and prints; returns the exit code (0, or 3 when a job's plan does not fit). Throws ConfigError on bad
/// input (jobs on different hardware, a wafer-scale system).
int run_shared_fabric(std::ostream& out, std::ostream& err, const SharedFabricOptions& o);

/// `dtsim validate ... --shared-fabric`: every check run_shared_fabric makes before it simulates; returns the exit
/// code as it would.
int validate_shared_fabric(std::ostream& out, std::ostream& err, const SharedFabricOptions& o);

}  // namespace dtsim::app
