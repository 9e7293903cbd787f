#pragma once
/// Memory per device, per pipeline stage: weights, gradients and mixed-precision Adam states (Rajbhandari et al.
/// 2019: 2 + 2 + 12 bytes per parameter), and the activations held in flight under the schedule, sequence
/// parallelism and recomputation (Korthikanti et al. 2022, Table 2). See ../shared/reference/formulas.md.
#include <cstdint>
#include <vector>

#include "model/transformer.hpp"
#include "parallel/plan.hpp"
#include "scenario/scenario_spec.hpp"

namespace dtsim::parallel {

struct StageMemory {
  int64_t stage = 0;
  double params = 0;  ///< parameters held by one device of this stage
  double weights_bytes = 0, gradients_bytes = 0, optimizer_bytes = 0, activations_bytes = 0;
  int64_t microbatches_in_flight = 0;  ///< (chunk-)microbatches whose activations are stored at the peak
  double total_bytes() const { return weights_bytes + gradients_bytes + optimizer_bytes + activations_bytes; }
};

struct MemoryReport {
  std::vector<StageMemory> stages;
  double capacity_bytes = 0;
  int64_t peak_stage = 0;
  double peak_bytes() const { return stages.empty() ? 0.0 : stages[size_t(peak_stage)].total_bytes(); }
  bool fits() const { return peak_bytes() <= capacity_bytes; }
};

/// Activation bytes one layer stores for one microbatch of shape `sh` on one TP rank (no recomputation, or
/// selective).
double layer_activation_bytes(const model::ModelSpec& m, const model::Shape& sh, bool selective);

/// Parameters one device of `stage` holds.
double stage_params(const model::Transformer& t, const DerivedPlan& plan, int64_t stage);
/// Of those, the expert parameters (mixture of experts; 0 otherwise).
double stage_expert_params(const model::Transformer& t, const DerivedPlan& plan, int64_t stage);

/// `plan` is derive_plan(s).
MemoryReport estimate_memory(const scenario::ScenarioSpec& s, const DerivedPlan& plan, const model::Transformer& t);

}  // namespace dtsim::parallel
