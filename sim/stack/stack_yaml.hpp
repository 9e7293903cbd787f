#pragma once
/// Reads a software stack file (hardware/stacks/*.yaml) into a StackSpec; every problem goes to `diag` with its
/// file, line, column and key. See docs/yaml-reference.md, section "Stack files".
#include <string>

#include "core/diagnostics.hpp"
#include "stack/stack_spec.hpp"

namespace dtsim::stack {

StackSpec load_stack(const std::string& path, Diagnostics& diag);

}  // namespace dtsim::stack
