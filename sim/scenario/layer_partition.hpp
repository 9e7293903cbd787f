#pragma once
/// How a model's layers are split over pipeline stages: evenly by default, or as given by parallel.stage_layers
/// (published runs balance the embedding and the head by giving the first and last stages fewer layers: BLOOM
/// 176B, 70 layers on 12 stages; Llama 3 405B, 126 layers on 16 stages).
#include <cstdint>
#include <vector>

#include "scenario/scenario_spec.hpp"

namespace dtsim::scenario {

/// Layers of each virtual stage (model chunk) in the model's order (chunk * pp + stage in loops); they sum to
/// num_hidden_layers.
std::vector<int64_t> chunk_layers(const ScenarioSpec& s);

/// The virtual stage (index into chunk_layers) that model chunk `chunk` of `stage` holds under the scenario's
/// schedule: chunk * pp + stage in loops, stage or 2 pp - 1 - stage in a V (ScheduleDef::chunk_placement).
int64_t chunk_index(const ScenarioSpec& s, int64_t stage, int64_t chunk);

/// Layers one device of `stage` holds, over all its chunks.
int64_t stage_layers(const ScenarioSpec& s, int64_t stage);

/// The first layer of virtual stage `vs`.
int64_t first_layer(const ScenarioSpec& s, int64_t vs);

/// Layers of the largest model chunk: the largest parallel.stage_layers entry, or layers / (pp * vpp) rounded up
/// (safe to call before the partition is checked).
int64_t largest_chunk_layers(const ScenarioSpec& s);

/// How many of a chunk's `layers` (its first ones) are recomputed in full before their backward pass: all of them
/// under recompute: full, the first training.recompute_layers of them when that is set, none otherwise.
int64_t recomputed_layers(const ScenarioSpec& s, int64_t layers);

/// Layers one device of `stage` recomputes in full, over all its chunks.
int64_t stage_recomputed_layers(const ScenarioSpec& s, int64_t stage);

}  // namespace dtsim::scenario
