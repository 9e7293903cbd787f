#pragma once
/// `dtsim compare`: several scenarios side by side (GPU clusters and wafer-scale systems on the same model and
/// batch): time, throughput, FLOP/s, memory headroom, power and energy, and the partitioning burden: how many
/// parallel plans a GPU cluster offers for that model and how far the worst is from the best. Each side shows its
/// model, batch and plan, the breakdown of its step and its step-time interval; a few sentences at the end name the
/// fastest side, by how much, and the term that decides it (compare_verdict.hpp).
#include <iosfwd>
#include <string>
#include <vector>

namespace dtsim::app {

struct CompareOptions {
  std::vector<std::string> scenarios;
  std::vector<std::string> sets;  ///< --set KEY=VALUE, applied to every scenario
  std::string format = "table";
  bool burden = true;  ///< simulate every plan of each GPU scenario
  int jobs = 2;        ///< child processes at a time (the command line defaults to the core count)
  bool quiet = false;  ///< no progress on standard error
};

/// Returns the exit code (0, or 3 when no scenario could be simulated).
int compare(std::ostream& out, const CompareOptions& o);

}  // namespace dtsim::app
