#pragma once
/// A scenario as every command simulates it: loaded and checked (scenario::load_scenario), then completed with
/// what needs the simulator's models: the micro batch of a wafer-scale system left to the compiler
/// (wafer/micro_batch.hpp). Commands load through here so that run, validate, explain, compare, search and sweep
/// all see the same micro batch.
#include <string>
#include <vector>

#include "scenario/scenario_spec.hpp"

namespace dtsim::app {

/// Throws ConfigError as scenario::load_scenario does. The scenario's warnings (keys it gives without effect,
/// scenario/keys_without_effect.hpp) go to standard error, each once per process (a command that loads a scenario
/// again, or a child process forked after the load, does not repeat them), unless `quiet`.
scenario::ScenarioSpec load_for_simulation(const std::string& path, const std::vector<std::string>& overrides,
                                           bool quiet = false);

}  // namespace dtsim::app
