#pragma once
/// `dtsim search`: every parallel plan for a scenario's model, batch and GPU cluster, pruned where it cannot divide
/// or fit (a count for each reason), the rest simulated and ranked by step time, with the scenario's own plan's
/// place among them.
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
};

/// Returns the exit code: 0, or 3 when no plan fits.
int search(std::ostream& out, std::ostream& log, const SearchOptions& o);

}  // namespace dtsim::app
