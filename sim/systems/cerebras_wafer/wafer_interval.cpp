#include "systems/cerebras_wafer/wafer_interval.hpp"

#include <cmath>
#include <cstdio>

namespace dtsim::wafer {

stack::StepInterval step_interval(const systems::WaferSpec& w, double step_s)
{
  stack::StepInterval iv;
  const size_t n = w.heldout_errors.size();
  if (n < kIntervalMinRuns) {
    iv.basis = "none: " + std::to_string(n) + " published runs held out of the " + w.name +
               " fit (wafer.calibration.heldout_errors), fewer than " + std::to_string(kIntervalMinRuns) +
               " (docs/wafer.md)";
    return iv;
  }
  double r = 0;
  iv = stack::log_normal_interval(w.heldout_errors, step_s, r);
  char b[200];
  std::snprintf(b, sizeof b, "90%% interval from %zu published wafer runs held out of the fit (RMS log error %.1f%%)",
                n, 100 * r);
  iv.basis = b;
  return iv;
}

}  // namespace dtsim::wafer
