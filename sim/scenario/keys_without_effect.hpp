#pragma once
/// Keys a scenario may give that change nothing in what it simulates: training.fp8_recipe under a precision other
/// than fp8, and the keys a kind of system does not read (ScenarioRules::unread_keys). Refusing them would break
/// sweeps over the precision and scenario fragments shared by GPU and wafer-scale scenarios; accepting them without
/// a word would let a user believe they acted. They are warnings: each names the file and line (or the --set), the
/// key, the value and why it has no effect.
#include <vector>

#include "config/yaml_file.hpp"
#include "core/diagnostics.hpp"
#include "scenario/scenario_spec.hpp"

namespace dtsim::scenario {

/// The warnings of `s`, loaded from `file` (with its --set values applied): one per key without effect that the
/// file or the command line gives.
std::vector<Diagnostic> keys_without_effect(const config::YamlFile& file, const ScenarioSpec& s);

}  // namespace dtsim::scenario
