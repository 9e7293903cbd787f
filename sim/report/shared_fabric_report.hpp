#pragma once
/// The result of `dtsim run JOB1.yaml JOB2.yaml ... --shared-fabric`: each job's step time alone on its nodes and
/// shared with the other jobs, and where the difference went, as a table for people or JSON for programs.
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "replay/replay.hpp"
#include "report/system_sections.hpp"
#include "scenario/scenario_spec.hpp"

namespace dtsim::report {

struct SharedJobReport {
  const scenario::ScenarioSpec* spec = nullptr;
  const SystemSections* sections = nullptr;  ///< its kind's (a GPU cluster's: jobs share a switch fabric)
  std::string summary;          ///< model, devices and plan in words
  std::vector<int64_t> nodes;   ///< cluster nodes (hosts) the job runs on
  int64_t leaves = 0;           ///< leaf switches its NICs are on
  int64_t leaves_shared = 0;    ///< of which other jobs have NICs on too
  double alone_s = 0;           ///< one step with the fabric to itself (on the same nodes)
  replay::Breakdown alone;
  std::vector<double> shared_steps_s;  ///< its steps that ended while every job ran
  int64_t steps_run = 0;
  replay::Breakdown shared;            ///< mean over those steps
  double shared_s() const;
};

struct SharedFabricReport {
  std::string placement;        ///< packed or spread
  int64_t cluster_nodes = 0;  ///< scale-up domains of the cluster (nodes on DGX-style hardware)
  int64_t min_steps = 0;
  std::vector<double> start_s;  ///< when each job's first step started (all 0 unless staggered)
  std::vector<SharedJobReport> jobs;
};

void print_shared_table(std::ostream& out, const SharedFabricReport& r);
void print_shared_json(std::ostream& out, const SharedFabricReport& r);

}  // namespace dtsim::report
