#pragma once
/// `dtsim explain`: the kernels and collectives of one layer (and of the embedding and the head) on one
/// tensor-parallel rank, with their FLOPs, bytes, achieved efficiency and time: the "why" behind a step time.
#include <iosfwd>

#include "scenario/scenario_spec.hpp"

namespace dtsim::report {

void print_explain(std::ostream& out, const scenario::ScenarioSpec& s);

}  // namespace dtsim::report
