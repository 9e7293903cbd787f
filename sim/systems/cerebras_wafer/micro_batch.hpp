#pragma once
/// The micro batch a wafer-scale system runs when the scenario leaves it to the compiler (`training.micro_batch:
/// auto`, or the key left out): as the Cerebras compiler does, the largest micro batch whose working set fits in
/// on-wafer SRAM under the scenario's recomputation. Candidates are the divisors of each system's batch, because a
/// step is a whole number of passes on every system.
#include <cstdint>
#include <string>

#include "scenario/scenario_spec.hpp"

namespace dtsim::wafer {

struct MicroBatchChoice {
  int64_t micro_batch = 1;
  bool fits = false;               ///< false: not even micro batch 1 fits (micro_batch is then 1)
  int64_t system_batch = 1;        ///< samples per system and step: global_batch / systems
  double sram_bytes = 0;           ///< on-wafer SRAM the chosen micro batch needs
  double capacity_bytes = 0;       ///< on-wafer SRAM of one system
  int64_t next_micro_batch = 0;    ///< the next larger divisor, which does not fit; 0 when none is larger
  double next_sram_bytes = 0;      ///< what it would need
  scenario::WaferMode sized_for = scenario::WaferMode::WeightStreaming;
  /// One line for the report: what was picked and why.
  std::string reason(scenario::Recompute recompute) const;
};

/// The largest divisor of each system's batch that fits in SRAM, sized for the scenario's execution mode; under
/// `wafer.mode: auto`, for weight streaming, the mode that holds the fewest weights on the wafer (three layers'
/// worth), so that the largest models fit. `s` must be a loaded wafer-scale scenario.
MicroBatchChoice choose_micro_batch(const scenario::ScenarioSpec& s);

/// When `s.training.micro_batch_auto`: sets micro_batch, microbatches and micro_batch_reason to the choice.
/// Otherwise leaves `s` as it is.
void resolve_micro_batch(scenario::ScenarioSpec& s);

}  // namespace dtsim::wafer
