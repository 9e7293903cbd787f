#pragma once
#include <map>
#include <string>
#include <vector>

#include "config/map_reader.hpp"
#include "core/diagnostics.hpp"
#include "hardware/hardware_spec.hpp"

namespace dtsim::hardware {

/// Parses and checks a hardware description; every problem is recorded in `diag`. `sets` are "KEY=VALUE"
/// overrides of the file's keys (`--set hardware.KEY=VALUE` on the command line, `--vary hardware.KEY=...`).
/// Reads the optional `collectives: {algorithm, protocol}` map of a hardware or stack file (names from
/// collectives/algorithm_registry.hpp).
CollectiveForce read_collective_force(config::MapReader& parent);

/// Reads a device's `peak_flops` mapping (a GPU's or a wafer's): at least one precision.
std::map<std::string, double> read_peak_flops(config::MapReader& parent);

HardwareSpec load_hardware(const std::string& path, Diagnostics& diag, const std::vector<std::string>& sets = {});

}  // namespace dtsim::hardware
