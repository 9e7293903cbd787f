#pragma once
/// `dtsim bench`: how fast dtsim itself is. Each named case (a step, a sweep, a plan search) runs in a forked child,
/// `repeat` times; the parent measures wall time (steady clock, fork to reap), and the kernel reports the child's
/// user CPU time and peak resident memory (wait4). Results are a table or JSON; nothing is asserted. See
/// docs/performance.md.
#include <iosfwd>
#include <string>
#include <vector>

namespace dtsim::app {

/// One benchmark case: a step (`run`), a sweep or a plan search of a shipped scenario.
struct BenchCase {
  enum class Kind { Run, Sweep, Search };
  std::string name;
  std::string what;
  Kind kind = Kind::Run;
  std::string scenario;            ///< relative to the repository root
  std::vector<std::string> sets;   ///< run and search: --set overrides; sweep: --vary lists
};

/// The built-in cases, in the order `dtsim bench` runs them.
std::vector<BenchCase> bench_cases();

/// The `dtsim` arguments that print (run, search) or write (sweep, to `{out}.jsonl`, `{out}` standing for a fresh
/// prefix) the case's record: what the golden records (tests/golden/) keep of each case.
std::vector<std::string> bench_record_command(const BenchCase& c);

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
