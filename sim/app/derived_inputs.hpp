#pragma once
/// What-ifs on the files a scenario names: for one point of a sweep, "hardware.network.nic.bandwidth=400 Gb/s" sets
/// network.nic.bandwidth in a copy of the scenario's hardware file, and "model.num_hidden_layers=48" sets a key of a
/// copy of its model file; the scenario then names the copy. `dtsim run --set` cannot reach into those files
/// (`model` and `hardware` are file names there), so a sensitivity study on any hardware quantity goes through here.
#include <string>
#include <vector>

#include "scenario/scenario_spec.hpp"

namespace dtsim::app {

/// True for "hardware.KEY..." and "model.KEY...": a key of the file the scenario names.
bool is_file_key(const std::string& key);

/// Loads the scenario with `overrides` (KEY=VALUE each). Those of file keys are applied to copies of the model or
/// hardware file, written under their own file name (the model's name is its file's stem) in a temporary directory
/// that is removed before this returns. Errors found in a copy name the original file and the key as set; a key the
/// file does not know is reported by its loader (with a suggestion), as for the original.
scenario::ScenarioSpec load_with_file_keys(const std::string& scenario, const std::vector<std::string>& overrides);

}  // namespace dtsim::app
