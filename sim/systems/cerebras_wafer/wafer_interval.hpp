#pragma once
/// The step-time interval of a wafer-scale answer: from the wafer model's relative errors on published runs that
/// its fit did not see (wafer.calibration.heldout_errors, written by scripts/calibrate_wafer.py), taken as
/// log-normal with zero mean as the GPU side's stacks do (stack/interval.hpp). Fewer than six errors give none.
#include "stack/interval.hpp"
#include "systems/cerebras_wafer/wafer_hardware.hpp"

namespace dtsim::wafer {

/// Held-out runs needed before an interval is given.
inline constexpr size_t kIntervalMinRuns = 6;

stack::StepInterval step_interval(const systems::WaferSpec& w, double step_s);

}  // namespace dtsim::wafer
