#pragma once
/// How the hardware reader reads the sections of one kind of system (its `kind`): each wing under sim/systems/
/// implements it and systems::install() registers it under the kind's name before any file is read, so that this
/// layer reads every kind without knowing any.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/key.hpp"
#include "config/map_reader.hpp"
#include "hardware/hardware_spec.hpp"

namespace dtsim::hardware {

class HardwareKind {
 public:
  virtual ~HardwareKind() = default;
  /// Reads the kind's sections from the file's root (every key but name, kind, description and default_stack)
  /// into `hw`, and finishes the root (unknown keys).
  virtual void read_sections(config::MapReader& root, HardwareSpec& hw) const = 0;
  /// Checks that need the file as it is written too (`file`: read without the --set overrides), after reading.
  virtual void check(HardwareSpec& hw, const HardwareSpec& file, Diagnostics& diag) const = 0;
  /// The kind's keys by mapping, and a sentence saying what its sections describe, for the reference
  /// (docs/yaml-reference.md).
  virtual std::vector<config::KeyGroup> key_groups() const = 0;
  /// The kind's sections of `hw` as read (`dtsim hardware FILE`): every key under its path, with the value the
  /// simulation uses, the file's or the default of a key it leaves out, in SI units (hardware/hardware_record.hpp).
  virtual nlohmann::ordered_json sections_record(const HardwareSpec& hw) const = 0;
  virtual std::string key_doc() const = 0;
};

/// Registers `kind` under `name` (systems::install does, once per process); a second registration of a name
/// replaces the first.
void register_hardware_kind(const std::string& name, const HardwareKind& kind);

/// The kind registered under `name`, or nullptr.
const HardwareKind* find_hardware_kind(const std::string& name);

/// The registered names, in the order of registration. Throws std::logic_error when none is registered (a program
/// that reads inputs without calling systems::install()).
std::vector<std::string> hardware_kind_names();

}  // namespace dtsim::hardware
