#pragma once
/// The activation recomputation a wafer-scale system runs with, chosen with the micro batch as the Cerebras
/// compiler does (docs/wafer.md, "The compiler's choices"). In weight streaming the compiler keeps each layer's
/// input on the wafer and recomputes the layer before its backward: the only policy under which the micro batches
/// Cerebras ships fit (Llama-3.1-8B at sequence 8,192 with micro batch 20 needs 43 GB for its layer inputs alone,
/// against 44 GB of SRAM on a CS-3; shared/reference/cerebras.md, section 3); Cerebras names activation
/// checkpointing as what relieves on-wafer memory (release 2.0 blog). Megatron-LM's selective recomputation and its
/// per-layer count are not offered by the Cerebras stack.
#include <string>

#include "scenario/scenario_spec.hpp"

namespace dtsim::wafer {

/// The compiler's recomputation for `s` (its training.recompute left out): full, every layer.
scenario::Recompute compiler_recompute(const scenario::ScenarioSpec& s);

/// One line for the report: what the compiler chose and why.
std::string compiler_recompute_reason(const scenario::ScenarioSpec& s);

/// Why the recomputation the scenario sets is not one the Cerebras stack offers (expected and found, for an input
/// error), or "" when it is: none and full are (full is the compiler's; none is a what-if of a compiler that keeps
/// every activation), selective is not. A per-layer count (training.recompute_layers) is refused by the wafer's
/// check_plan, whether or not the recomputation is given.
std::string why_recompute_not_offered(const scenario::ScenarioSpec& s);

}  // namespace dtsim::wafer
