#pragma once
// Helpers shared by the unit tests: paths into the source tree and a relative-difference check.
#include <cmath>
#include <string>

#include "core/diagnostics.hpp"
#include "model/model_spec.hpp"
#include "model/model_yaml.hpp"

namespace dtsim::test {

/// Absolute path of a file of the source tree (DTSIM_SOURCE_DIR is the project root).
inline std::string source_path(const std::string& relative) { return std::string(DTSIM_SOURCE_DIR) + "/" + relative; }

/// Relative difference |a - b| / |b|.
inline double rel_diff(double a, double b) { return std::fabs(a - b) / std::fabs(b); }

/// Loads a model file of the source tree; fails the calling test (by throwing) on any diagnostic.
inline model::ModelSpec load_model_or_throw(const std::string& relative)
{
  Diagnostics diag;
  model::ModelSpec m = model::load_model(source_path(relative), diag);
  diag.throw_if_any();
  return m;
}

}  // namespace dtsim::test
