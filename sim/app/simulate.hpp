#pragma once
/// The whole way from a checked scenario to a report: memory check, step program, schedule graph, replay.
#include "report/run_report.hpp"
#include "scenario/scenario_spec.hpp"

namespace dtsim::app {

/// Simulates one step unless the plan does not fit in memory (then report.simulated is false).
/// Runs a SimGrid engine: at most one call per process.
report::RunReport simulate(const scenario::ScenarioSpec& s, bool record_trace);

}  // namespace dtsim::app
