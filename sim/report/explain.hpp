#pragma once
/// `dtsim explain` on a GPU cluster: the kernels and collectives of one layer (and of the embedding and the head) on
/// one tensor-parallel rank, with their FLOPs, bytes, achieved efficiency and time: the "why" behind a step time.
/// (Wafer-scale systems explain their units in systems/cerebras_wafer/cerebras_wafer.cpp.)
#include <iosfwd>

#include "parallel/plan.hpp"
#include "scenario/scenario_spec.hpp"

namespace dtsim::report {

/// `plan` is derive_plan(s).
void print_explain(std::ostream& out, const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan);

}  // namespace dtsim::report
