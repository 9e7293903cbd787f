#pragma once
/// The per-rank shape of a scenario's layers (model::Shape), as the step program and `explain` build it, with what
/// the software stack changes in the kernels (Transformer Engine's fp8 scaling recipe and weight-cast reuse).
#include "model/transformer.hpp"
#include "scenario/scenario_spec.hpp"

namespace dtsim::scenario {

model::Shape layer_shape(const ScenarioSpec& s);

}  // namespace dtsim::scenario
