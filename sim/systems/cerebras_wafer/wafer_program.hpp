#pragma once
/// A transformer on a wafer-scale system: per unit (the embedding, each layer, the head) the weights that stream
/// in, the FLOPs and time of its forward and backward passes on the whole wafer, and the activations it hands to
/// the next unit; plus the memory the model needs in on-wafer SRAM and in MemoryX for each execution mode.
#include <cstdint>
#include <string>
#include <vector>

#include "model/transformer.hpp"
#include "parallel/plan.hpp"
#include "scenario/scenario_spec.hpp"

namespace dtsim::wafer {

struct WaferUnit {
  std::string label;
  double params = 0;
  double weight_bytes = 0;  ///< 16-bit weights, streamed in once per pass and per direction
  double fwd_s = 0, bwd_s = 0, recompute_s = 0;  ///< one pass of `pass_batch` samples on the whole wafer
  double fwd_flops = 0, bwd_flops = 0, recompute_flops = 0;
  double out_bytes = 0;  ///< activations handed to the next unit, one pass
  /// Weight streaming under full recomputation: the unit's input (its checkpoint), one pass, written off the wafer
  /// during its forward and read back for its backward; 0 when the input stays on the wafer.
  double offloaded_input_bytes = 0;
};

struct WaferProgram {
  std::vector<WaferUnit> units;  ///< embedding, layers, head, in forward order
  int64_t passes = 1;            ///< passes per step on each system (gradient accumulation)
  int64_t pass_batch = 1;        ///< samples per pass
  double optimizer_bytes_per_param = 0;
  double model_flops = 0, hardware_flops = 0;  ///< whole step, all systems
};

/// Where the model's state and activations live, for one execution mode.
struct WaferMemory {
  scenario::WaferMode mode = scenario::WaferMode::WeightStreaming;
  double sram_capacity = 0, sram_weights = 0, sram_activations = 0;
  /// Weight streaming under full recomputation: the layer inputs kept for the backward, held off the wafer.
  double offloaded_activations = 0;
  double memoryx_capacity = 0, memoryx_weights = 0, memoryx_gradients = 0, memoryx_optimizer = 0;
  double sram_total() const { return sram_weights + sram_activations; }
  double memoryx_total() const { return memoryx_weights + memoryx_gradients + memoryx_optimizer; }
  bool fits() const { return sram_total() <= sram_capacity && memoryx_total() <= memoryx_capacity; }
  std::string why_not() const;  ///< "" when it fits
};

/// `plan` is derive_plan(s), in both.
WaferMemory wafer_memory(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan,
                         const model::Transformer& t, scenario::WaferMode mode);

WaferProgram build_wafer_program(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan,
                                 const model::Transformer& t);

}  // namespace dtsim::wafer
