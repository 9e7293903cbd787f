#pragma once
// Runs the built dtsim program on a scenario of the source tree with extra arguments and parses its JSON report;
// fails the calling test when it exits non-zero. Each run is its own process (one SimGrid engine per process).
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "test_paths.hpp"

namespace dtsim::test {

inline nlohmann::json run_json(const std::string& scenario, const std::string& extra)
{
  const std::string cmd = "'" + dtsim_binary() + "' run '" + source_path(scenario) + "' --format json" + extra;
  auto r = run_capture(cmd);
  EXPECT_EQ(r.rc, 0) << cmd;
  return r.rc == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

}  // namespace dtsim::test
