#pragma once
/// The keys of a hardware file (hardware/*.yaml) that every kind shares, declared once (config/key.hpp): the root
/// (name, kind, description, default_stack), a device's `peak_flops` and the `collectives` a hardware or stack file
/// may force. Each kind's own sections are declared in its wing (sim/systems/<kind>/*_hardware.cpp).
#include <vector>

#include "config/key.hpp"

namespace dtsim::hardware::keys {

using config::Key;

extern const Key kName, kKind, kDescription, kDefaultStack;
extern const Key kPeakFlops;
extern const Key kCollectives, kCollectiveAlgorithm, kCollectiveProtocol;

/// The precisions a `peak_flops` mapping may list, each a compute rate.
const std::vector<Key>& peak_flops_keys();
std::vector<const Key*> peak_flops_key_list();

/// The root's keys, for the reference.
std::vector<config::KeyGroup> root_groups();

}  // namespace dtsim::hardware::keys
