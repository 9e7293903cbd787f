// --set hardware.KEY=VALUE and --set model.KEY=VALUE reach the files a scenario names (their `hardware` and
// `model` are paths): the loaders apply them, for run, validate, search and sweep alike, and their errors point
// at the --set as written.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/diagnostics.hpp"
#include "scenario/scenario_spec.hpp"

namespace fs = std::filesystem;

namespace {

// Loads from the project root, so that paths in messages are the ones written here.
dtsim::scenario::ScenarioSpec load_with_sets(const std::vector<std::string>& sets)
{
  const fs::path saved = fs::current_path();
  fs::current_path(DTSIM_SOURCE_DIR);
  struct Back {
    fs::path p;
    ~Back() { fs::current_path(p); }
  } back{saved};
  return dtsim::scenario::load_scenario("scenarios/tiny.yaml", sets);
}

std::string load_error_with_sets(const std::vector<std::string>& sets)
{
  try {
    load_with_sets(sets);
  } catch (const dtsim::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(FileOverrides, HardwareKeyIsSet)
{
  const auto plain = load_with_sets({});
  EXPECT_DOUBLE_EQ(plain.hardware.network.nic.bw_Bps, 25e9);  // 200 Gb/s in the file
  const auto s = load_with_sets({"hardware.network.nic.bandwidth=100 Gb/s", "hardware.node.nvlink.latency=3 us"});
  EXPECT_DOUBLE_EQ(s.hardware.network.nic.bw_Bps, 12.5e9);
  EXPECT_DOUBLE_EQ(s.hardware.scale_up.nvlink.latency_s, 3e-6);
  EXPECT_EQ(s.hardware.file, plain.hardware.file);  // the file itself, not a copy
}

TEST(FileOverrides, ModelKeyIsSet)
{
  const auto s = load_with_sets({"model.num_hidden_layers=8"});
  EXPECT_EQ(s.model.layers, 8);
  EXPECT_EQ(s.model.name, "tiny-gpt");
}

TEST(FileOverrides, ErrorsPointAtTheSet)
{
  EXPECT_EQ(
      load_error_with_sets({"hardware.network.nic.bandwidth=0 Gb/s"}),
      "<command line> --set hardware.network.nic.bandwidth=0 Gb/s: error: network.nic.bandwidth: expected a value "
      "between 1 MB/s and 1000 PB/s, got '0 Gb/s'\n  referenced from scenarios/tiny.yaml:4:11 (hardware)");
  EXPECT_EQ(load_error_with_sets({"hardware.name.x=1"}),
            "<command line> --set hardware.name.x=1: error: 'hardware.name' is not a mapping, so 'hardware.name.x' "
            "cannot be set\n  referenced from scenarios/tiny.yaml:4:11 (hardware)");
}

}  // namespace
