#pragma once
/// The parallel plans a GPU cluster offers for one model, batch and device count: every combination of tensor
/// and pipeline sizes (data parallelism fills the rest), micro batch, recomputation and schedule, checked for
/// divisibility and memory. This is what "partitioning" asks of a user; a wafer-scale system has one plan.
#include <cstdint>
#include <vector>

#include "scenario/scenario_spec.hpp"

namespace dtsim::parallel {

struct PlanSpace {
  std::vector<scenario::ScenarioSpec> fitting;  ///< plans that divide and fit in memory
  int64_t candidates = 0;                       ///< combinations looked at
  int64_t invalid = 0;                          ///< do not divide (heads, layers, batch, ...)
  int64_t not_fitting = 0;                      ///< divide but do not fit in device memory
};

/// The dimensions searched: tp among the divisors of the devices per node, pp among the divisors of the layer
/// count, dp = devices / (tp * pp); micro batch 1, 2, 4; recomputation selective or full; 1F1B, and interleaved
/// 1F1B with 2 chunks where it applies; sequence parallelism with tp > 1.
PlanSpace enumerate_plans(const scenario::ScenarioSpec& base);

}  // namespace dtsim::parallel
