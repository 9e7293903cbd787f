#pragma once
/// How the wafer's cores run one GEMM, so that its utilisation depends on the layer's shape (docs/wafer.md,
/// "Compute that depends on the layer's shape").
///
/// Mechanism (Lie, "Cerebras Architecture Deep Dive", Hot Chips 34, 2022, and IEEE Micro 43(3), 2023; James,
/// "Scaling Up and Out", Cerebras blog, 2021): in weight streaming the activations stay distributed over the
/// wafer's cores, each core with its own 48 KB of SRAM, while the weights (or, for the attention core and the
/// weight gradients, the other activation operand) arrive over the fabric and trigger the cores' multiply-adds.
/// The compiler spreads the rows of the resident operand (tokens, or tokens x heads) over the cores; when there are
/// fewer rows than cores, each row's reduction dimension is split over the cores it needs, so that every core is
/// busy. A core then works through `reduction_per_core` multiply-adds per arriving element and pays a fixed cost per
/// step (receiving, handing its partial sum on), as a vector unit's start-up (Hockney's n_1/2):
///
///   v = k * min(1, batch * m / cores),   efficiency = max_efficiency * v / (v + half_length)
///
/// max_efficiency and half_length are fitted on published runs (scripts/calibrate_wafer.py, hardware files).
#include "systems/cerebras_wafer/wafer_hardware.hpp"
#include "model/ops.hpp"

namespace dtsim::wafer {

/// Multiply-adds of a GEMM's reduction dimension that one core works through per step (elements, not FLOPs).
double reduction_per_core(const model::Op& gemm, double cores);

/// Fraction of the wafer's peak at which `gemm` runs on wafer `w`.
double core_gemm_efficiency(const model::Op& gemm, const systems::WaferSpec& w);

}  // namespace dtsim::wafer
