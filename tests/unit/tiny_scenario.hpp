#pragma once
/// scenarios/tiny.yaml and tiny-moe.yaml, the unit tests' small GPT and small mixture of experts, with overrides.
#include <string>
#include <vector>

#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"

namespace dtsim::test {

/// scenarios/tiny.yaml with these `--set` overrides ("parallel.tp=2", ...).
inline scenario::ScenarioSpec tiny_scenario(std::vector<std::string> overrides)
{
  return scenario::load_scenario(source_path("scenarios/tiny.yaml"), overrides);
}

/// scenarios/tiny-moe.yaml with these `--set` overrides.
inline scenario::ScenarioSpec tiny_moe(std::vector<std::string> overrides = {})
{
  return scenario::load_scenario(source_path("scenarios/tiny-moe.yaml"), overrides);
}

}  // namespace dtsim::test
