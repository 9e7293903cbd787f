#pragma once
/// `dtsim report`: a results CSV (from `dtsim sweep`) turned into a report a reader can keep: DIR/report.md and
/// DIR/report.html with the dtsim version and the exact command, the inputs (each scenario's YAML with the model and
/// hardware files it names, and a summary of both), the results table and the charts of `dtsim plot`. The HTML holds
/// its charts as inline SVG and its style inline, so that it is one self-contained file; the Markdown refers to the
/// PNG and SVG files written beside it. The same inputs give byte-identical report files (no dates).
#include <iosfwd>
#include <string>
#include <vector>

namespace dtsim::app {

struct ReportOptions {
  std::string csv;                     ///< results CSV
  std::vector<std::string> scenarios;  ///< scenario files the results came from (their text is shown)
  std::string out_dir;                 ///< empty: the CSV path without ".csv", plus "-report"
  std::string title;                   ///< empty: made from the model and the hardware of the results
  std::string command;                 ///< the command line that made the report, shown in it
};

/// Writes the report; returns 0, or 1 when gnuplot cannot draw the charts. Bad input (a missing or malformed CSV,
/// a scenario that does not load, a CSV without an `ok` row) throws dtsim::ConfigError before anything is written.
int write_report(const ReportOptions& o, std::ostream& log);

}  // namespace dtsim::app
