#pragma once
/// A wafer-scale system's failures, checkpoint writes and restarts.
#include "report/time_to_train.hpp"

namespace dtsim::systems {

report::FailureAssumptions wafer_failure_assumptions(const scenario::ScenarioSpec& s);

}  // namespace dtsim::systems
