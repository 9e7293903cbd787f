#pragma once
/// dtsim calibrate: fits a software stack's efficiency factors to measured step times, so that dtsim matches a
/// user's own cluster from one or two measured steps.
///
/// RUNS.csv has the columns `scenario` (a path relative to the CSV's folder), `measured_step_time_s`, and optionally
/// `set` (space-separated KEY=VALUE overrides, as --set takes them) and `label`; lines starting with '#' are
/// comments. The named factors are fitted by least squares on the log of the step time (Levenberg-Marquardt with
/// finite-difference derivatives, every simulation in a child process); each run's measured, simulated-before and
/// simulated-after time is printed, with leave-one-out errors when there are three runs or more, and with the
/// errors of the --check runs (never fitted). STACK.yaml is the base stack with the fitted factors and a
/// calibration record (runs, held-out errors) whose provenance (runs, residuals, date, dtsim version) is written
/// in comments; the held-out errors give every later prediction its interval (stack/interval.hpp).
#include <iosfwd>
#include <string>
#include <vector>

namespace dtsim::app {

struct CalibrateOptions {
  std::string runs_csv;
  std::string out;                  ///< STACK.yaml to write
  std::string base_stack;           ///< empty: the first run's scenario's stack
  std::vector<std::string> fit;     ///< factor names; empty: one per run up to two, compute first
  std::string check_csv;            ///< runs to report and record as held out, never fitted
  std::string name;                 ///< name of the written stack; empty: the base's, marked calibrated
  int jobs = 1;
};

/// Returns 0 when done; bad input throws ConfigError (exit 2): an unreadable CSV, a run that cannot be simulated
/// (its plan does not fit, say), more factors than runs, or a factor the runs cannot determine.
int calibrate(std::ostream& out, std::ostream& err, const CalibrateOptions& o);

}  // namespace dtsim::app
