#pragma once
/// What-ifs on the files a scenario names: "hardware.network.nic.bandwidth=400 Gb/s" sets network.nic.bandwidth of
/// the scenario's hardware file, "model.num_hidden_layers=48" a key of its model file. load_scenario applies them
/// (the same code path as `dtsim run --set`); sweeps name them here.
#include <string>
#include <vector>

#include "scenario/scenario_spec.hpp"

namespace dtsim::app {

/// True for "hardware.KEY..." and "model.KEY...": a key of the file the scenario names.
bool is_file_key(const std::string& key);

/// Loads the scenario with `overrides` (KEY=VALUE each), file keys included: scenario::load_scenario; its warnings
/// as load_for_simulation prints them, unless `quiet`.
scenario::ScenarioSpec load_with_file_keys(const std::string& scenario, const std::vector<std::string>& overrides,
                                           bool quiet = false);

}  // namespace dtsim::app
