#pragma once
/// `dtsim bench`: how fast dtsim itself is. Each named case (a step, a sweep, a plan search) runs in a forked child,
/// `repeat` times; the parent measures wall time (steady clock, fork to reap), and the kernel reports the child's
/// user CPU time and peak resident memory (wait4). Results are a table or JSON; nothing is asserted. See
/// docs/performance.md.
#include <iosfwd>
#include <string>
#include <vector>

namespace dtsim::app {

struct BenchOptions {
  std::vector<std::string> cases;  ///< case names; empty: every case but `tiny`
  std::string root;                ///< directory holding scenarios/ (the repository root); empty: found (see --root)
  std::string scenario;            ///< a custom case: this scenario file, with `sets`
  std::vector<std::string> sets;   ///< --set overrides of the custom case
  int repeat = 3;
  int jobs = 2;                    ///< processes of the sweep and search cases
  std::string format = "table";
  bool list = false;               ///< list the cases and run nothing
};

/// Runs the benchmark; returns the exit code (0, or 1 when a case failed). Unknown case names throw ConfigError.
int bench(std::ostream& out, std::ostream& log, const BenchOptions& o);

}  // namespace dtsim::app
