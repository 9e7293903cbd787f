#pragma once
/// `dtsim compare`: several scenarios side by side (GPU clusters and wafer-scale systems on the same model and
/// batch): time, throughput, FLOP/s, memory headroom, power and energy, and the partitioning burden: how many
/// parallel plans a GPU cluster offers for that model and how far the worst is from the best.
#include <iosfwd>
#include <string>
#include <vector>

namespace dtsim::app {

struct CompareOptions {
  std::vector<std::string> scenarios;
  std::string format = "table";
  bool burden = true;  ///< simulate every plan of each GPU scenario
  int jobs = 2;        ///< child processes at a time (the command line defaults to the core count)
};

/// Returns the exit code (0, or 3 when no scenario could be simulated).
int compare(std::ostream& out, const CompareOptions& o);

}  // namespace dtsim::app
