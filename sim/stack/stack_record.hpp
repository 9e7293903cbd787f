#pragma once
/// A stack file as the loader resolved it (`dtsim stack FILE`): every key a stack file may give, under its path in the
/// file ("factors.compute"), with the value the simulation uses: the file's, or the default for keys the file leaves
/// out. Quantities are in SI units (seconds, bytes). The golden records of the shipped stacks (tests/golden/stacks/)
/// hold it, so that a key dropped from a stack file fails a test naming the stack and the key.
#include <nlohmann/json.hpp>

#include "stack/stack_spec.hpp"

namespace dtsim::stack {

/// The resolved stack, by key path. A key whose absence defers to the scenario (`overlap.*`) is null when absent;
/// `collectives.*` is "auto" when the stack forces nothing; `nccl` is NCCL_VERSION_CODE (0: unpublished).
nlohmann::ordered_json stack_record(const StackSpec& st);

}  // namespace dtsim::stack
