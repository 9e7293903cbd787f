#pragma once
/// One fuzz input through the loader it looks like, as tests/fuzz/fuzz_inputs.cpp does; shared with the unit test
/// that replays the recorded inputs (tests/unit/fuzz_regressions_test.cpp).
#include <sstream>
#include <string>
#include <vector>

#include "app/calibration_runs.hpp"
#include "core/diagnostics.hpp"
#include "hardware/hardware_yaml.hpp"
#include "model/model_yaml.hpp"
#include "scenario/scenario_spec.hpp"
#include "stack/stack_yaml.hpp"

namespace dtsim::fuzz {

/// The "#set KEY=VALUE" lines of a scenario input (YAML comments), applied as --set overrides.
inline std::vector<std::string> overrides_in(const std::string& text)
{
  std::vector<std::string> sets;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("#set ", 0) == 0)
      sets.push_back(line.substr(5));
  return sets;
}

/// Reads the file `path`, whose content is `text`, as a scenario when it names a hardware file ("hardware:"), else
/// as a model when it has a model key ("hidden_size", "num_hidden_layers" or "model_type"), else as a software
/// stack when it has a stack's section ("framework:", "kernels:" or "factors:"), else as the runs `dtsim calibrate`
/// reads when it has their column ("measured_step_time_s"), else as a hardware description.
/// Returns the loader's name. Bad input throws ConfigError; anything else it throws is a defect.
inline const char* load_any(const std::string& path, const std::string& text)
{
  auto has = [&](const char* key) { return text.find(key) != std::string::npos; };
  Diagnostics diag;
  if (has("hardware:")) {
    scenario::load_scenario(path, overrides_in(text));
    return "scenario";
  }
  if (has("hidden_size") || has("num_hidden_layers") || has("model_type")) {
    model::load_model(path, diag);
    return "model";
  }
  if (has("framework:") || has("kernels:") || has("factors:")) {
    stack::load_stack(path, diag);
    return "stack";
  }
  if (has("measured_step_time_s")) {
    app::read_calibration_runs(path, "");
    return "calibration runs";
  }
  hardware::load_hardware(path, diag);
  return "hardware";
}

}  // namespace dtsim::fuzz
