#pragma once
/// `dtsim stack FILE` and `dtsim hardware FILE`: an input file as dtsim's loader resolved it, every key with the value
/// the simulation uses (the file's, or the default of a key it leaves out), so that a reader sees what a file means and
/// the golden records (tests/golden/stacks/, tests/golden/hardware/) pin every shipped file key by key.
#include <iosfwd>
#include <string>

namespace dtsim::app {

/// Loads the stack file at `path` and prints its record (stack/stack_record.hpp) as JSON (`format` "json") or as one
/// "key.path  value" line per key ("table": a quantity in a unit files write, "192 GiB", from the keys'
/// declarations), "(default)" after a value the file leaves to its default. A bad file
/// throws ConfigError (exit 2) with every problem found.
void show_stack(std::ostream& out, const std::string& path, const std::string& format);

/// The same for a hardware file (hardware/hardware_record.hpp).
void show_hardware(std::ostream& out, const std::string& path, const std::string& format);

}  // namespace dtsim::app
