#include "scenario/schedule_registry.hpp"

#include "core/diagnostics.hpp"

namespace dtsim::scenario {

// The catalog: each schedule's entry is defined in scenario/schedules/<name>.cpp and registered by one line of
// schedule_registry() below, in the order the YAML check lists them.
ScheduleDef gpipe_schedule();
ScheduleDef one_f_one_b_schedule();
ScheduleDef interleaved_1f1b_schedule();
ScheduleDef zb_h1_schedule();
ScheduleDef zb_h2_schedule();
ScheduleDef zb_v_schedule();
ScheduleDef dualpipe_schedule();

const std::vector<ScheduleDef>& schedule_registry()
{
  static const std::vector<ScheduleDef> registry = {
      gpipe_schedule(),
      one_f_one_b_schedule(),
      interleaved_1f1b_schedule(),
      zb_h1_schedule(),
      zb_h2_schedule(),
      zb_v_schedule(),
      dualpipe_schedule(),
  };
  return registry;
}

const ScheduleDef& schedule_def(const std::string& name)
{
  if (const ScheduleDef* d = find_schedule(name))
    return *d;
  throw InternalError("schedule_def: no schedule '" + name + "' in the registry");
}

const ScheduleDef* find_schedule(const std::string& name)
{
  for (const ScheduleDef& d : schedule_registry())
    if (name == d.name)
      return &d;
  return nullptr;
}

std::vector<std::string> schedule_names()
{
  std::vector<std::string> names;
  for (const ScheduleDef& d : schedule_registry())
    names.push_back(d.name);
  return names;
}

}  // namespace dtsim::scenario
