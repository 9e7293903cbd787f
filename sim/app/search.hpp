#pragma once
/// `dtsim search`: every parallel plan for a scenario's model, batch and GPU cluster, pruned where it cannot divide
/// or fit (a count for each reason), the rest simulated in the order of a proven lower bound on their step time
/// (SystemKind::lower_bound_step_s) until no plan left can enter the top k, and ranked by step time, with the
/// scenario's own plan's place among them (always simulated).
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace dtsim::app {

struct SearchOptions {
  std::string scenario;
  std::vector<std::string> sets;
  int64_t devices = 0;  ///< 0: the scenario's
  int top = 10;
  std::string format = "table";
  int jobs = 2;
  bool narrow = false;  ///< the smaller space of `dtsim compare`
  bool full_space = false;  ///< PlanDimensions::full: also ZeRO 2 and 3 and the overlap options
  bool quiet = false;   ///< no progress and no messages on `log`
  /// Simulate every plan that fits; otherwise plans whose proven lower bound on the step time exceeds the top-th
  /// best step time simulated are not simulated (counted as pruned by bound).
  bool exhaustive = false;
};

/// Returns the exit code: 0, or 3 when no plan fits.
int search(std::ostream& out, std::ostream& log, const SearchOptions& o);

}  // namespace dtsim::app
