#pragma once
#include "core/diagnostics.hpp"
#include "model/model_spec.hpp"

namespace dtsim::model {

/// Parses a model description: our YAML files or a Hugging Face config.json as it is. In .json files keys that
/// dtsim does not use are ignored; in .yaml files they are errors (a typo must not pass silently).
ModelSpec load_model(const std::string& path, Diagnostics& diag);

}  // namespace dtsim::model
