#pragma once
/// A GPU cluster's failures, checkpoint writes and restarts, from the published statistics of a large training job.
#include "report/time_to_train.hpp"

namespace dtsim::systems {

report::FailureAssumptions gpu_failure_assumptions(const scenario::ScenarioSpec& s);

}  // namespace dtsim::systems
