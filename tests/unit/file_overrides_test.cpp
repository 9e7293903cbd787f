// --set hardware.KEY=VALUE and --set model.KEY=VALUE reach the files a scenario names (their `hardware` and
// `model` are paths): the loaders apply them, for run, validate, search and sweep alike, and their errors point
// at the --set as written.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "config/yaml_file.hpp"
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

// --unset KEY removes a key the file gives (parallel.stage_layers when pp changes): the loader then reads the key's
// default, as if the file had never given it.
TEST(FileOverrides, UnsetRemovesAScenarioKey)
{
  const auto s = load_with_sets({dtsim::config::unset_entry("parallel.pp")});
  EXPECT_EQ(s.parallel.pp, 1);  // the default
  EXPECT_EQ(s.parallel.dp, 8);  // 16 devices / tp 2, derived again
}

// Unsets come before the --set values: a key removed and set again takes the set value.
TEST(FileOverrides, UnsetThenSet)
{
  const auto s = load_with_sets({dtsim::config::unset_entry("parallel.pp"), "parallel.pp=2"});
  EXPECT_EQ(s.parallel.pp, 2);
  EXPECT_EQ(s.parallel.dp, 4);
}

TEST(FileOverrides, UnsetReachesTheHardwareFile)
{
  const auto plain = load_with_sets({});
  EXPECT_GT(plain.hardware.device.power_W, 0);
  const auto s = load_with_sets({dtsim::config::unset_entry("hardware.device.power")});
  EXPECT_EQ(s.hardware.device.power_W, 0);  // not given: no energy figures
}

// A key the file does not give is an error that names it, with the closest key the file gives.
TEST(FileOverrides, UnsetOfAKeyNotGivenIsAnError)
{
  EXPECT_EQ(load_error_with_sets({dtsim::config::unset_entry("parallel.stage_layers")}),
            "<command line> --unset parallel.stage_layers: error: 'parallel.stage_layers' cannot be unset: "
            "scenarios/tiny.yaml does not give it");
  EXPECT_EQ(load_error_with_sets({dtsim::config::unset_entry("parallel.ppp")}),
            "<command line> --unset parallel.ppp: error: 'parallel.ppp' cannot be unset: scenarios/tiny.yaml does "
            "not give it; did you mean 'parallel.pp'?");
  EXPECT_EQ(load_error_with_sets({dtsim::config::unset_entry("wafer.mode")}),
            "<command line> --unset wafer.mode: error: 'wafer.mode' cannot be unset: scenarios/tiny.yaml does not "
            "give it");
  EXPECT_EQ(load_error_with_sets({dtsim::config::unset_entry("hardware.device.powr")}),
            "<command line> --unset hardware.device.powr: error: 'hardware.device.powr' cannot be unset: "
            "hardware/dgx-a100-80gb.yaml does not give it; did you mean 'hardware.device.power'?\n"
            "  referenced from scenarios/tiny.yaml:4:11 (hardware)");
}

}  // namespace
