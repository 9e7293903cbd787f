#pragma once
#include <string>
#include <vector>

#include "core/diagnostics.hpp"
#include "hardware/hardware_spec.hpp"

namespace dtsim::hardware {

/// Parses and checks a hardware description; every problem is recorded in `diag`. `sets` are "KEY=VALUE"
/// overrides of the file's keys (`--set hardware.KEY=VALUE` on the command line, `--vary hardware.KEY=...`).
HardwareSpec load_hardware(const std::string& path, Diagnostics& diag, const std::vector<std::string>& sets = {});

}  // namespace dtsim::hardware
