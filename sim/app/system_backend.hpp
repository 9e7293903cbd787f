#pragma once
/// One interface for the kinds of system dtsim simulates. A GPU cluster (gpu_cluster_backend.cpp) and a wafer-scale
/// system (wafer_scale_backend.cpp: Cerebras CS-2 class, with MemoryX and SwarmX) implement the same calls, so that
/// the commands do not branch on the kind of hardware and a new kind of system is a new implementation.
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "parallel/plan.hpp"
#include "report/run_report.hpp"
#include "scenario/scenario_spec.hpp"
#include "stack/interval.hpp"

namespace dtsim::app {

/// The plans a system offers for one scenario (`dtsim compare`'s partitioning burden).
struct PlanChoices {
  int64_t candidates = 0, invalid = 0, not_fitting = 0;
  std::vector<scenario::ScenarioSpec> plans;  ///< those that divide and fit, to be simulated
  std::vector<std::string> names;             ///< one per plan, in a few words
};

class SystemBackend {
 public:
  virtual ~SystemBackend() = default;

  /// The report up to the simulation: parameters and memory, and report.why_not_fitting when the plan does not
  /// fit. Every check `run` makes before simulating (`dtsim validate` runs it too). Runs no SimGrid engine.
  virtual report::RunReport check_fit(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan) const = 0;

  /// Simulates one training step of `s` (`plan` is derive_plan(s)), unless it does not fit in memory: then
  /// report.simulated is false and report.why_not_fitting says why. Runs a SimGrid engine: one call per process.
  virtual report::RunReport simulate(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan,
                                     bool record_trace) const = 0;

  /// `dtsim explain`: the work of one layer (or unit) and what it costs, the "why" behind a step time.
  virtual void explain(std::ostream& out, const scenario::ScenarioSpec& s,
                       const parallel::DerivedPlan& plan) const = 0;

  /// `dtsim validate`: what was checked, in a few words (the model, the hardware, the plan).
  virtual std::string summary(const scenario::ScenarioSpec& s) const = 0;

  /// The scenario's plan in a few words (`dtsim compare`).
  virtual std::string describe_plan(const scenario::ScenarioSpec& s) const = 0;

  /// How sure a step time simulated at `step_s` is: an interval, or why there is none.
  virtual stack::StepInterval step_interval(const scenario::ScenarioSpec& s, double step_s) const = 0;

  /// Every plan the system offers for the scenario's model, batch and devices: a GPU cluster's parallel plans, a
  /// wafer-scale system's execution modes.
  virtual PlanChoices plan_choices(const scenario::ScenarioSpec& s) const = 0;
};

const SystemBackend& gpu_cluster_backend();
const SystemBackend& wafer_scale_backend();

/// The backend of the scenario's hardware.
const SystemBackend& backend_for(const scenario::ScenarioSpec& s);

/// `dtsim explain` of a loaded scenario, on its backend.
void explain(std::ostream& out, const scenario::ScenarioSpec& s);

}  // namespace dtsim::app
