#include "stack/interval.hpp"

#include <cmath>
#include <cstdio>

namespace dtsim::stack {

StepInterval step_interval(const StackSpec& stack, double step_s)
{
  StepInterval iv;
  if (!stack.given()) {
    iv.basis = "no software stack: the step time carries no calibrated correction and no error estimate";
    return iv;
  }
  const auto& c = stack.calibration;
  if (c.runs == 0) {
    iv.basis = "stack '" + stack.name + "' has never been calibrated: no error estimate";
    return iv;
  }
  if (c.heldout_errors.empty()) {
    iv.basis = "stack '" + stack.name + "' was calibrated on " + std::to_string(c.runs) +
               " runs with none held out: no error estimate";
    return iv;
  }
  double sum = 0;
  for (double e : c.heldout_errors)
    sum += std::log1p(e) * std::log1p(e);
  const double r = std::sqrt(sum / double(c.heldout_errors.size()));
  constexpr double z90 = 1.6449;  // two-sided 90% quantile of the standard normal
  iv.known = true;
  iv.low_s = step_s * std::exp(-z90 * r);
  iv.high_s = step_s * std::exp(z90 * r);
  char b[200];
  std::snprintf(b, sizeof b, "90%% interval from %zu held-out runs of stack '%s' (RMS log error %.1f%%)",
                c.heldout_errors.size(), stack.name.c_str(), 100 * r);
  iv.basis = b;
  return iv;
}

}  // namespace dtsim::stack
