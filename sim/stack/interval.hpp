#pragma once
/// How sure a predicted step time is: an interval from the errors that the stack's calibration measured on runs
/// its fit did not see (leave-one-out, or named check runs). Without such errors there is no interval, and the
/// reason says why (no stack, never calibrated, or calibrated without a held-out run).
#include <string>
#include <vector>

#include "stack/stack_spec.hpp"

namespace dtsim::stack {

struct StepInterval {
  bool known = false;
  double low_s = 0, high_s = 0;
  std::string basis;  ///< how it was made, or why there is none
};

/// A 90% interval for the measured step time of a run simulated at `step_s` with this stack: the held-out relative
/// errors e_i (simulated / measured - 1) taken as log-normal with zero mean and r = RMS(log(1 + e_i)), so that
/// the measured time lies in step_s * exp(+-1.645 r).
StepInterval step_interval(const StackSpec& stack, double step_s);

/// That interval from held-out relative errors (at least one), with `basis` left to the caller; the RMS log error r
/// is returned in `rms_log_error`.
StepInterval log_normal_interval(const std::vector<double>& heldout_errors, double step_s, double& rms_log_error);

}  // namespace dtsim::stack
