#pragma once
/// The registry of the kinds of system (system_kind.hpp), keyed by the hardware file's `kind`.
#include <iosfwd>
#include <string>
#include <vector>

#include "scenario/scenario_spec.hpp"
#include "systems/system_kind.hpp"

namespace dtsim::systems {

/// Registers every kind's hardware reader and scenario rules for the input readers (hardware::HardwareKind,
/// scenario::ScenarioRules). Every program calls it once before reading inputs.
void install();

/// Every registered kind, in the order of the registry.
const std::vector<const SystemKind*>& system_kinds();

/// The kind named `name`, or nullptr.
const SystemKind* find_system_kind(const std::string& name);

/// The kind of the scenario's hardware. Throws std::logic_error for a kind the registry lacks (the hardware reader
/// accepts only registered names).
const SystemKind& system_kind(const scenario::ScenarioSpec& s);

/// `dtsim explain` of a loaded scenario, on its kind.
void explain(std::ostream& out, const scenario::ScenarioSpec& s);

}  // namespace dtsim::systems
