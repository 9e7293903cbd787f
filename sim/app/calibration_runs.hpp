#pragma once
/// The runs `dtsim calibrate` fits or checks, as RUNS.csv lists them: the columns `scenario` (a path relative to the
/// CSV's folder), `measured_step_time_s`, and optionally `set` (space-separated KEY=VALUE overrides, as --set takes
/// them) and `label`; lines starting with '#' are comments.
#include <string>
#include <vector>

#include "core/diagnostics.hpp"

namespace dtsim::app {

struct CalibrationRun {
  std::string label;
  std::string scenario;           ///< resolved path
  std::vector<std::string> sets;  ///< --set overrides, the base stack's included
  double measured_s = 0;
  Origin where;                   ///< the run's line in the CSV
};

/// Reads RUNS.csv (or a --check file); `stack_override`, when not empty, is added to every run as stack=PATH. Bad
/// input throws ConfigError naming the file, line and column: an unknown or missing column, an empty scenario, a
/// measured time that is not a positive number, no runs.
std::vector<CalibrationRun> read_calibration_runs(const std::string& path, const std::string& stack_override);

}  // namespace dtsim::app
