#include "systems/cerebras_wafer/recompute_choice.hpp"

namespace dtsim::wafer {

scenario::Recompute compiler_recompute(const scenario::ScenarioSpec&) { return scenario::Recompute::Full; }

std::string compiler_recompute_reason(const scenario::ScenarioSpec&)
{
  return "the compiler's: each layer keeps its input (off the wafer under weight streaming) and is recomputed before "
         "its backward, as weight streaming needs for the micro batches Cerebras runs (docs/wafer.md)";
}

std::string why_recompute_not_offered(const scenario::ScenarioSpec& s)
{
  const auto& t = s.training;
  if (t.recompute == scenario::Recompute::Selective)
    return "expected none or full on wafer-scale hardware (" + s.hardware.file +
           "): the Cerebras compiler offers no selective recomputation; leave the key out for the compiler's choice, "
           "got selective";
  return "";
}

}  // namespace dtsim::wafer
