#pragma once
/// Replays one training step on wafer-scale systems, on SimGrid, in one of two execution modes:
///  - weight streaming: the model's units (embedding, layers, head) run one after the other on the whole wafer;
///    each unit's weights stream in from MemoryX (broadcast through SwarmX to every system) while the previous
///    unit computes (two weight buffers), activations stay on the wafer and cross the mesh between units, each
///    backward unit's gradients stream out (summed through SwarmX) and MemoryX updates that unit's weights;
///  - layer pipelined: the whole model is resident, units mapped onto contiguous regions of tiles in proportion
///    to their work; samples flow through the regions (all forwards, then all backwards) with activations
///    crossing the mesh between neighbouring regions; several systems sum gradients through SwarmX at the end.
#include "replay/replay.hpp"
#include "scenario/scenario_spec.hpp"
#include "systems/cerebras_wafer/wafer_program.hpp"

namespace dtsim::wafer {

/// `mode` must be WeightStreaming or LayerPipelined. Creates its own SimGrid engine: call once per process.
replay::ReplayResult run_wafer_replay(const scenario::ScenarioSpec& s, const WaferProgram& p,
                                      scenario::WaferMode mode, bool record_trace);

}  // namespace dtsim::wafer
