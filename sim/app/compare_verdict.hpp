#pragma once
/// The closing sentences of `dtsim compare`: which side is fastest, by how much each other side is slower, and the
/// term of the step's breakdown that decides it (the term whose difference makes most of the gap).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtsim::app {

/// The terms of a step that `dtsim compare` shows for every side, in this order.
enum CompareTerm {
  kTermCompute,        ///< forward, backward and recomputation kernels
  kTermCommunication,  ///< exposed communication: TP, PP, DP, EP, CP; on a wafer, gradients out, hand-offs, fabric
  kTermStreaming,      ///< exposed weight streaming from MemoryX (wafer only)
  kTermBubble,         ///< pipeline bubble and idle time
  kTermOptimizer,
  kTermOverhead,       ///< the software stack's fixed time per step
  kTermStraggler,      ///< waiting for slower devices (GPU clusters with `variability`)
  kTerms
};

/// "compute", "exposed communication", ...
const char* term_name(int term);
/// Key of the term in `dtsim compare --format json` ("compute_s", ...).
const char* term_key(int term);
/// A run record's breakdown (keys as the JSON report writes them; a term a kind does not have counts 0) grouped
/// into the compared terms (seconds; they sum to the breakdown's total).
std::vector<double> compare_terms(const nlohmann::ordered_json& breakdown);

struct CompareSide {
  std::string name;
  bool simulated = false;
  double step_s = 0;
  std::vector<double> terms;  ///< kTerms values (compare_terms)
  std::string why_not;        ///< when not simulated: why ("it does not fit in memory")
};

/// A few plain sentences: the fastest side; for each other simulated side, how much longer it takes and the term
/// that decides it; the sides that were not simulated.
std::vector<std::string> verdict(const std::vector<CompareSide>& sides);

}  // namespace dtsim::app
