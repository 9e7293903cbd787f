#pragma once
/// Several training jobs on one cluster, replayed together on the same links (dtsim run A.yaml B.yaml
/// --shared-fabric): each job on nodes of its own, its steps back to back from time 0, so that where their traffic
/// meets (the uplink of a leaf switch both have NICs on) each slows the others, as max-min sharing divides the link.
/// Nodes are never shared (a node's NVLink and NICs belong to one job); only the switch fabric is.
#include <cstdint>
#include <vector>

#include "parallel/placement.hpp"
#include "parallel/plan.hpp"
#include "parallel/schedule.hpp"
#include "replay/replay.hpp"
#include "replay/step_program.hpp"
#include "scenario/scenario_spec.hpp"

namespace dtsim::replay {

struct SharedJob {
  const scenario::ScenarioSpec* spec = nullptr;
  const parallel::DerivedPlan* plan = nullptr;  ///< derive_plan(*spec)
  const StepProgram* program = nullptr;
  const parallel::PipelineSchedule* schedule = nullptr;
  parallel::Placement placement;  ///< on the cluster's nodes (Placement::place_on)
  double start_s = 0;             ///< when its first step starts (jobs out of phase)
};

struct SharedJobResult {
  int64_t steps_run = 0;               ///< steps simulated, the last ones included
  std::vector<double> contended_s;     ///< the steps that ended while every job was still running, in order
  Breakdown average;                   ///< mean over those steps
  double mean_step_s() const;
};

/// Replays every job's steps back to back from its start_s, each step after the previous one and its stack's fixed
/// time per step, on one platform of the cluster the placements name (the hardware of the first job; the caller
/// has checked that all jobs run on the same). A job's contended steps are those that started once every job had
/// started and ended while every job still ran. Jobs stop starting steps once every job has run `min_steps`
/// contended-started steps; the last job to get there stops at that moment, when every other job had run that many
/// and was still running, so each job has at least `min_steps` contended steps. With one job: its steps alone, every
/// one alike. One SimGrid engine: call once per process.
std::vector<SharedJobResult> run_shared_fabric(const std::vector<SharedJob>& jobs, int64_t min_steps);

}  // namespace dtsim::replay
