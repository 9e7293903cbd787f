#pragma once
/// A kind of system dtsim simulates, as one wing behind one interface: a GPU cluster (gpu_cluster/) and a Cerebras
/// wafer-scale system (cerebras_wafer/) implement the same calls, and the commands (run, validate, explain, compare,
/// search, sweep, calibrate, shared-fabric jobs, study reports) call them without asking which kind they have. The
/// hardware file's `kind` key picks the wing (system_kinds.cpp); a new kind is a new wing and one registry line.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "hardware/hardware_kind.hpp"
#include "parallel/placement.hpp"
#include "parallel/plan.hpp"
#include "replay/shared_fabric.hpp"
#include "report/run_report.hpp"
#include "report/system_sections.hpp"
#include "scenario/scenario_rules.hpp"
#include "scenario/scenario_spec.hpp"
#include "stack/interval.hpp"

namespace dtsim::systems {

/// The plans a system offers for one scenario (`dtsim compare`'s partitioning burden).
struct PlanChoices {
  int64_t candidates = 0, invalid = 0, not_fitting = 0;
  std::vector<scenario::ScenarioSpec> plans;  ///< those that divide and fit, to be simulated
  std::vector<std::string> names;             ///< one per plan, in a few words
};

/// One of several jobs on one switch fabric (`dtsim run --shared-fabric`): its scenario, its placement on the
/// cluster's nodes, and when its first step starts.
struct FabricJob {
  const scenario::ScenarioSpec* spec = nullptr;
  parallel::Placement placement;
  double start_s = 0;
};

/// Adds one "label: value" row of a table of inputs.
using InputRow = std::function<void(const std::string& label, const std::string& value)>;

/// A wing reads its kind's hardware sections (hardware::HardwareKind) and sets its rules on scenarios
/// (scenario::ScenarioRules), registered for the readers by systems::install(); the rest is below.
class SystemKind : public hardware::HardwareKind, public scenario::ScenarioRules {
 public:
  virtual ~SystemKind() = default;

  /// The hardware file's `kind` that names this wing ("gpu-cluster").
  virtual const char* name() const = 0;

  /// Completes the choices the system's compiler or framework makes where the scenario leaves them open (a
  /// wafer's micro batch); run by every command after loading, so that all see the same choices.
  virtual void complete(scenario::ScenarioSpec& s) const = 0;

  /// The report up to the simulation: parameters and memory, and report.why_not_fitting when the plan does not
  /// fit. Every check `run` makes before simulating (`dtsim validate` runs it too). Runs no SimGrid engine.
  virtual report::RunReport check_fit(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan) const = 0;

  /// Simulates one training step of `s` (`plan` is derive_plan(s)), unless it does not fit in memory: then
  /// report.simulated is false and report.why_not_fitting says why. Runs a SimGrid engine: one call per process.
  virtual report::RunReport simulate(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan,
                                     bool record_trace) const = 0;

  /// How the run report prints this kind's own parts (rows, memory, breakdown terms, JSON sections, trace names).
  virtual const report::SystemSections& sections() const = 0;

  /// `dtsim explain`: the work of one layer (or unit) and what it costs, the "why" behind a step time.
  virtual void explain(std::ostream& out, const scenario::ScenarioSpec& s,
                       const parallel::DerivedPlan& plan) const = 0;

  /// `dtsim validate`: what was checked, in a few words (the model, the hardware, the plan).
  virtual std::string summary(const scenario::ScenarioSpec& s) const = 0;

  /// The scenario's plan in a few words (`dtsim compare`).
  virtual std::string describe_plan(const scenario::ScenarioSpec& s) const = 0;

  /// "1 GPU", "16 systems": a count of this kind's devices in words.
  virtual std::string count_devices(int64_t n) const = 0;

  /// The rows of a table of inputs that say where the model runs: hardware, devices, plan (study reports).
  virtual void input_rows(const scenario::ScenarioSpec& s, const InputRow& row) const = 0;

  /// How sure a step time simulated at `step_s` is: an interval, or why there is none.
  virtual stack::StepInterval step_interval(const scenario::ScenarioSpec& s, double step_s) const = 0;

  /// Every plan the system offers for the scenario's model, batch and devices: a GPU cluster's parallel plans, a
  /// wafer-scale system's execution modes.
  virtual PlanChoices plan_choices(const scenario::ScenarioSpec& s) const = 0;

  /// A proven lower bound on what simulate() would give as the step time of a plan that fits (seconds), computed
  /// without simulating: `dtsim search` simulates plans in its order and leaves out those that cannot enter its
  /// top k. 0 where the kind has none.
  virtual double lower_bound_step_s(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan) const = 0;

  /// Why `dtsim search` has no plans of this kind to search, or "" when it has.
  virtual std::string why_no_plan_search() const = 0;
  /// Why `dtsim calibrate` cannot fit a software stack on runs of this kind, or "" when it can.
  virtual std::string why_no_stack_calibration() const = 0;
  /// Why jobs of this kind cannot share a switch fabric (`dtsim run --shared-fabric`), or "" when they can.
  virtual std::string why_no_shared_fabric(const scenario::ScenarioSpec& s) const = 0;
  /// Replays the steps of `jobs` (all of this kind, on one cluster) together on its switch fabric, as
  /// replay::run_shared_fabric says, `min_steps` contended steps each. A kind whose why_no_shared_fabric is not ""
  /// throws it. Runs a SimGrid engine: one call per process.
  virtual std::vector<replay::SharedJobResult> replay_shared_fabric(const std::vector<FabricJob>& jobs,
                                                                    int64_t min_steps) const = 0;
};

}  // namespace dtsim::systems
