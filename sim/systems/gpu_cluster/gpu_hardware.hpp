#pragma once
/// The GPU-cluster wing's part of a hardware file (`kind: gpu-cluster`): the device, the node and its NVLink, the
/// network of NICs and switches, read through their keys' declarations into HardwareSpec's GPU fields.
#include <vector>

#include <nlohmann/json.hpp>

#include "config/key.hpp"
#include "config/map_reader.hpp"
#include "core/diagnostics.hpp"
#include "hardware/hardware_spec.hpp"

namespace dtsim::systems {

/// Reads the device, node, network and collectives sections from the file's root, and finishes the root.
void read_gpu_hardware(config::MapReader& root, hardware::HardwareSpec& hw);

/// After a what-if on a link's bandwidth (`file`: the hardware as written, without --set), a goodput left alone
/// keeps the measured ratio of the two; then no goodput above its bandwidth.
void check_gpu_hardware(hardware::HardwareSpec& hw, const hardware::HardwareSpec& file, Diagnostics& diag);

/// The GPU fields of `hw` by key path (device, node or scale_up, network, collectives), as `dtsim hardware` prints
/// them: a section the file leaves out is null where its absence means "not offered" (gemm_fp8 falls back to gemm).
nlohmann::ordered_json gpu_hardware_record(const hardware::HardwareSpec& hw);

/// The wing's hardware keys by mapping, for the reference.
std::vector<config::KeyGroup> gpu_hardware_key_groups();

}  // namespace dtsim::systems
