#pragma once
/// A hardware file as the loader resolved it (`dtsim hardware FILE`): its root keys and its kind's sections, every
/// key under its path in the file ("network.nic.goodput") with the value the simulation uses, the file's or the
/// default of a key it leaves out, in SI units (seconds, bytes, bytes/s, FLOP/s, watts). The golden records of the
/// shipped hardware files (tests/golden/hardware/) hold it, so that a dropped key fails a test naming file and key.
#include <nlohmann/json.hpp>

#include "hardware/hardware_spec.hpp"

namespace dtsim::hardware {

/// `default_stack` is the stack's path as resolved against the file's folder, or null (no stack).
nlohmann::ordered_json hardware_record(const HardwareSpec& hw);

}  // namespace dtsim::hardware
