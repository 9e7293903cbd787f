// Golden tests for every bad-input message: each tests/config_errors/scenario-*.yaml is loaded with
// dtsim::scenario::load_scenario and must throw ConfigError whose what() (all diagnostics, one per line) equals
// the text of the case's .expected file, byte for byte.
//
// Paths in messages are the ones the test passes: it changes to the project root (DTSIM_SOURCE_DIR) and loads
// "tests/config_errors/<case>.yaml", so expectations do not depend on where the build folder is.
//
// Overrides (--set): a case may carry lines of the form
//   # overrides: parallel.tp=3
// (one KEY=VALUE per line, repeat the line for several, kept in order); they are passed to load_scenario.
//
// Files named model-*.yaml / hardware-*.yaml / stack-*.yaml are not cases: scenarios reference them.
//
// The choices a catalog gives (every pipeline schedule, every collective algorithm) stand in the .expected files as
// {schedules} and {algorithms}, so that adding an entry to a catalog edits no expected message.
//
// DTSIM_UPDATE_GOLDEN=1 rewrites the .expected files from the current messages instead of comparing. Read every
// rewritten file before committing it: an expectation states how the message SHOULD read.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "collectives/algorithm_registry.hpp"
#include "config/suggest.hpp"
#include "core/diagnostics.hpp"
#include "scenario/schedule_registry.hpp"
#include "scenario/scenario_spec.hpp"

namespace fs = std::filesystem;

namespace {

const char* const kCaseDir = "tests/config_errors";  // relative to DTSIM_SOURCE_DIR

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

bool update_golden()
{
  const char* v = std::getenv("DTSIM_UPDATE_GOLDEN");
  return v && std::string(v) == "1";
}

// Each placeholder of an expected message and the catalog's list it stands for, as a message writes it.
std::vector<std::pair<std::string, std::string>> catalog_lists()
{
  return {{"{schedules}", dtsim::config::join_list(dtsim::scenario::schedule_names())},
          {"{algorithms}", dtsim::config::join_list(dtsim::collectives::algorithm_choices())}};
}

// `text` with every `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to)
{
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// An expected message with the catalogs' lists in place of their placeholders, and back.
std::string with_lists(std::string text)
{
  for (const auto& [placeholder, list] : catalog_lists())
    text = replaced(text, placeholder, list);
  return text;
}
std::string with_placeholders(std::string text)
{
  for (const auto& [placeholder, list] : catalog_lists())
    text = replaced(text, "one of " + list + ",", "one of " + placeholder + ",");
  return text;
}

// Case names (file names without .yaml) of every scenario-*.yaml, sorted.
std::vector<std::string> case_names()
{
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(DTSIM_SOURCE_DIR) / kCaseDir, ec)) {
    const std::string file = e.path().filename().string();
    if (e.is_regular_file() && starts_with(file, "scenario-") && e.path().extension() == ".yaml")
      names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string read_text(const fs::path& p)
{
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "# overrides: KEY=VALUE" lines of a case file, in order.
std::vector<std::string> overrides_of(const fs::path& yaml)
{
  const std::string tag = "# overrides:";
  std::vector<std::string> out;
  std::istringstream in(read_text(yaml));
  for (std::string line; std::getline(in, line);) {
    if (!starts_with(line, tag))
      continue;
    std::string v = line.substr(tag.size());
    size_t b = v.find_first_not_of(" \t");
    size_t e = v.find_last_not_of(" \t\r");
    out.push_back(b == std::string::npos ? std::string() : v.substr(b, e - b + 1));
  }
  return out;
}

// The expectation file holds what() followed by one newline (so that editors and diffs are happy).
std::string strip_final_newline(std::string s)
{
  if (!s.empty() && s.back() == '\n')
    s.pop_back();
  return s;
}

// Runs the test body from the project root and goes back afterwards.
class ConfigErrorsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override
  {
    saved_ = fs::current_path();
    fs::current_path(DTSIM_SOURCE_DIR);
  }
  void TearDown() override { fs::current_path(saved_); }

 private:
  fs::path saved_;
};

TEST_P(ConfigErrorsTest, MessageMatchesExpected)
{
  const std::string name = GetParam();
  const fs::path yaml = fs::path(kCaseDir) / (name + ".yaml");
  const fs::path expected_file = fs::path(kCaseDir) / (name + ".expected");
  const std::vector<std::string> overrides = overrides_of(yaml);

  std::string actual;
  bool threw_config_error = false;
  try {
    dtsim::scenario::load_scenario(yaml.generic_string(), overrides);
  } catch (const dtsim::ConfigError& e) {
    threw_config_error = true;
    actual = e.what();
    EXPECT_FALSE(e.items().empty()) << "ConfigError without diagnostics";
  } catch (const std::exception& e) {
    FAIL() << yaml.generic_string() << ": expected dtsim::ConfigError, got another exception: " << e.what();
  }
  ASSERT_TRUE(threw_config_error) << yaml.generic_string()
                                  << ": expected load_scenario to throw dtsim::ConfigError, it succeeded";

  if (update_golden()) {
    std::ofstream(expected_file, std::ios::binary) << with_placeholders(actual) << "\n";
    std::cout << "[golden] wrote " << expected_file.generic_string() << "\n";
    return;
  }
  ASSERT_TRUE(fs::is_regular_file(expected_file))
      << "missing " << expected_file.generic_string() << " for case " << yaml.generic_string()
      << " (run with DTSIM_UPDATE_GOLDEN=1 to write it, then read it). Actual message:\n"
      << actual;
  const std::string expected = with_lists(strip_final_newline(read_text(expected_file)));
  EXPECT_EQ(expected, actual) << "message of " << yaml.generic_string() << " differs from "
                              << expected_file.generic_string();
}

// gtest parameter names allow only letters, digits and '_'.
std::string param_name(const ::testing::TestParamInfo<std::string>& info)
{
  std::string s = info.param;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)))
      c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(ConfigErrors, ConfigErrorsTest, ::testing::ValuesIn(case_names()), param_name);

// The fixture folder itself: cases exist, and no .expected file is left without its case.
TEST(ConfigErrors, FixtureFolderIsConsistent)
{
  const fs::path dir = fs::path(DTSIM_SOURCE_DIR) / kCaseDir;
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  EXPECT_GE(case_names().size(), 20u) << "expected the bad-input cases in " << dir;
  for (const auto& e : fs::directory_iterator(dir)) {
    const fs::path p = e.path();
    const std::string file = p.filename().string();
    if (p.extension() == ".expected") {
      EXPECT_TRUE(starts_with(file, "scenario-")) << file << ": only scenario-* cases have expectations";
      EXPECT_TRUE(fs::is_regular_file(fs::path(p).replace_extension(".yaml")))
          << file << " has no matching .yaml case";
    } else if (p.extension() == ".yaml") {
      EXPECT_TRUE(starts_with(file, "scenario-") || starts_with(file, "model-") || starts_with(file, "hardware-") ||
                  starts_with(file, "stack-"))
          << file << ": name cases scenario-*.yaml and referenced files model-*, hardware-* or stack-*.yaml";
    }
  }
}

// A shipped scenario loads without error, so the cases fail for their own reason, not because the good files
// they reference are broken.
TEST(ConfigErrors, ReferencedGoodFilesLoad)
{
  const fs::path saved = fs::current_path();
  fs::current_path(DTSIM_SOURCE_DIR);
  try {
    dtsim::scenario::load_scenario("scenarios/tiny.yaml", {});
  } catch (const std::exception& e) {
    ADD_FAILURE() << "scenarios/tiny.yaml should load: " << e.what();
  }
  fs::current_path(saved);
}

}  // namespace
