#include "systems/system_kinds.hpp"

#include <stdexcept>

#include "systems/cerebras_wafer/cerebras_wafer.hpp"
#include "systems/gpu_cluster/gpu_cluster.hpp"

namespace dtsim::systems {

const std::vector<const SystemKind*>& system_kinds()
{
  // One line per wing.
  static const std::vector<const SystemKind*> kinds = {
      &gpu_cluster(),
      &cerebras_wafer(),
  };
  return kinds;
}

void install()
{
  for (const SystemKind* k : system_kinds()) {
    hardware::register_hardware_kind(k->name(), *k);
    scenario::register_scenario_rules(k->name(), *k);
  }
}

const SystemKind* find_system_kind(const std::string& name)
{
  for (const SystemKind* k : system_kinds())
    if (name == k->name())
      return k;
  return nullptr;
}

const SystemKind& system_kind(const scenario::ScenarioSpec& s)
{
  if (const SystemKind* k = find_system_kind(s.hardware.kind))
    return *k;
  throw std::logic_error("no system kind '" + s.hardware.kind + "' is registered (hardware file " + s.hardware.file +
                         ")");
}

void explain(std::ostream& out, const scenario::ScenarioSpec& s)
{
  system_kind(s).explain(out, s, parallel::derive_plan(s));
}

}  // namespace dtsim::systems
