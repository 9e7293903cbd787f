#pragma once
// Helpers shared by the unit tests: paths into the source tree, a relative-difference check, and running the
// built dtsim program (a second simulation cannot run in the test's own process).
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "core/diagnostics.hpp"
#include "model/model_spec.hpp"
#include "model/model_yaml.hpp"

namespace dtsim::test {

/// Absolute path of a file of the source tree (DTSIM_SOURCE_DIR is the project root).
inline std::string source_path(const std::string& relative) { return std::string(DTSIM_SOURCE_DIR) + "/" + relative; }

/// The whole content of a file ("" where it cannot be read).
inline std::string read_whole_file(const std::string& path)
{
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

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

/// Path of the built dtsim program (DTSIM_BINARY, set by tests/CMakeLists.txt), or "" when unavailable.
inline std::string dtsim_binary()
{
  const char* p = std::getenv("DTSIM_BINARY");
  return p && access(p, X_OK) == 0 ? std::string(p) : std::string();
}

struct CommandResult {
  std::string out;  ///< standard output
  int rc = -1;      ///< exit code, -1 when the command did not exit normally
};

/// Runs a shell command and captures its standard output.
inline CommandResult run_capture(const std::string& cmd)
{
  CommandResult r;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f)
    return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    r.out.append(buf, n);
  int status = pclose(f);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace dtsim::test
