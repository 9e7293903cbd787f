#pragma once
/// The whole way from a checked scenario to a report: memory check, step program, schedule graph, replay.
#include "report/run_report.hpp"
#include "scenario/scenario_spec.hpp"

namespace dtsim::app {

/// Everything `simulate` checks before it simulates, simulating nothing (`dtsim validate`): the plan derived and its
/// memory per device estimated, on a wafer-scale system for the mode that would run. report.why_not_fitting is
/// empty when the plan fits; otherwise it says why, and the report holds the memory breakdown.
report::RunReport check_fit(const scenario::ScenarioSpec& s);

/// Simulates one step unless the plan does not fit in memory (then report.simulated is false and
/// report.why_not_fitting says why, as check_fit does). Runs a SimGrid engine: at most one call per process.
report::RunReport simulate(const scenario::ScenarioSpec& s, bool record_trace);

}  // namespace dtsim::app
