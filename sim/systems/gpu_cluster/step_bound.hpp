#pragma once
/// A proven lower bound on a GPU cluster's simulated step time, cheap enough to compute for every plan of a search
/// before simulating any: `dtsim search` simulates plans in the order of their bounds and leaves out those whose
/// bound exceeds the k-th best step time already simulated (they cannot enter the top k).
#include "parallel/plan.hpp"
#include "scenario/scenario_spec.hpp"
#include "systems/gpu_cluster/gpu_step.hpp"

namespace dtsim::systems {

/// The step time of the plan's pipeline schedule with every communication taking no time and every kernel running
/// at the time the compute model gives it alone on its GPU: each unit takes the sum of its compute steps; a unit
/// starts once the stage's previous unit (or pair of units) has ended and the units whose activations or gradients
/// it reads have ended; a pair of units (DualPipe, ep_overlap) takes the GPU one kernel at a time, so it lasts at
/// least the sum of both; then each stage's optimizer and the stack's fixed time per step. The replay only adds to
/// each of these (collectives, transfers, waits, kernels slowed by collectives' SMs), so the result is never above
/// the simulated step time (tests/unit/step_bound_test.cpp checks it on plans of every schedule).
double step_time_lower_bound(const scenario::ScenarioSpec& s, const GpuStep& step, bool pairs);

}  // namespace dtsim::systems
