#pragma once
#include <string>
#include <vector>

#include "core/diagnostics.hpp"
#include "model/model_spec.hpp"

namespace dtsim::model {

/// Parses a model description: our YAML files or a Hugging Face config.json as it is. In .json files keys that
/// dtsim does not use are ignored; in .yaml files they are errors (a typo must not pass silently). `sets` are
/// "KEY=VALUE" overrides of the file's keys (`--set model.KEY=VALUE` on the command line).
ModelSpec load_model(const std::string& path, Diagnostics& diag, const std::vector<std::string>& sets = {});

}  // namespace dtsim::model
