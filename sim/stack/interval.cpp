#include "stack/interval.hpp"

#include <cmath>
#include <cstdio>

namespace dtsim::stack {

StepInterval log_normal_interval(const std::vector<double>& heldout_errors, double step_s, double& rms_log_error)
{
  double sum = 0;
  for (double e : heldout_errors)
    sum += std::log1p(e) * std::log1p(e);
  rms_log_error = std::sqrt(sum / double(heldout_errors.size()));
  constexpr double z90 = 1.6449;  // two-sided 90% quantile of the standard normal
  StepInterval iv;
  iv.known = true;
  iv.low_s = step_s * std::exp(-z90 * rms_log_error);
  iv.high_s = step_s * std::exp(z90 * rms_log_error);
  return iv;
}

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
  double r = 0;
  iv = log_normal_interval(c.heldout_errors, step_s, r);
  char b[200];
  std::snprintf(b, sizeof b, "90%% interval from %zu held-out runs of stack '%s' (RMS log error %.1f%%)",
                c.heldout_errors.size(), stack.name.c_str(), 100 * r);
  iv.basis = b;
  return iv;
}

}  // namespace dtsim::stack
