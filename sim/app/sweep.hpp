#pragma once
/// `dtsim sweep`: the cartesian product of varied scenario keys, one simulation per point (each in its own child
/// process), one row per point in PREFIX.csv and PREFIX.jsonl. Rows are journaled as points finish
/// (PREFIX.partial.jsonl), so a stopped sweep run again with the same arguments computes only the missing points;
/// the final files are sorted by point index and are byte-identical whatever the number of jobs. See docs/sweeps.md.
#include <iosfwd>
#include <string>
#include <vector>

namespace dtsim::app {

struct SweepOptions {
  std::string scenario;            ///< scenario YAML file
  std::vector<std::string> more_scenarios;  ///< more scenario files: an outermost axis "scenario" over all of them
  std::vector<std::string> vary;   ///< "KEY=V1,V2,..." each; values may be ranges (expand_values)
  std::vector<std::string> unsets; ///< keys removed at every point, as config::unset_entry makes them (--unset KEY)
  std::string out_prefix;          ///< PREFIX of PREFIX.csv / PREFIX.jsonl; empty: "<scenario stem>-sweep"
  int jobs = 1;                    ///< simulations run at once (processes)
  bool quiet = false;              ///< no progress and no messages on `log`
};

/// Runs or resumes a sweep; returns the exit code (0 when every point has a row, whether it simulated or failed).
/// A refused sweep (empty, the same key varied twice, an unknown key, a bad value list, an output that holds another
/// sweep) throws dtsim::ConfigError before anything runs (exit code 2 in the CLI).
int sweep(const SweepOptions& o, std::ostream& log);

/// Expands the value list of one --vary: "1,2,4" -> {"1","2","4"}; "8..64x2" -> {"8","16","32","64"} (multiply
/// up to the bound); "1..7+3" -> {"1","4","7"} (add up to the bound); "1..3" -> {"1","2","3"}; a unit after a
/// range is kept on every value ("100..400x2 Gb/s" -> {"100 Gb/s","200 Gb/s","400 Gb/s"}); other values are kept
/// as text ("200 Gb/s"). Throws ConfigError on an empty list, an empty or repeated value, or a malformed range.
std::vector<std::string> expand_values(const std::string& spec);

}  // namespace dtsim::app
