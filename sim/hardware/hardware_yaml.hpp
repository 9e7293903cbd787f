#pragma once
#include "core/diagnostics.hpp"
#include "hardware/hardware_spec.hpp"

namespace dtsim::hardware {

/// Parses and checks a hardware description; every problem is recorded in `diag`.
HardwareSpec load_hardware(const std::string& path, Diagnostics& diag);

}  // namespace dtsim::hardware
