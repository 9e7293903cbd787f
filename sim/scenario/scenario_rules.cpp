#include "scenario/scenario_rules.hpp"

#include <map>
#include <stdexcept>

namespace dtsim::scenario {

namespace {

std::map<std::string, const ScenarioRules*>& registry()
{
  static std::map<std::string, const ScenarioRules*> rules;
  return rules;
}

}  // namespace

void register_scenario_rules(const std::string& name, const ScenarioRules& rules) { registry()[name] = &rules; }

const ScenarioRules& scenario_rules(const ScenarioSpec& s)
{
  auto it = registry().find(s.hardware.kind);
  if (it == registry().end())
    throw std::logic_error("no scenario rules are registered for the kind '" + s.hardware.kind +
                           "': call systems::install() before reading inputs");
  return *it->second;
}

}  // namespace dtsim::scenario
