// Hugging Face config.json models: named after _name_or_path or their folder (not "config"); a key one typo away
// from one dtsim reads gets a "did you mean" warning on stderr and is otherwise ignored (config.json holds many
// keys dtsim does not read). Model types dtsim does not model are refused (tests/config_errors/scenario-hf-*).
#include <gtest/gtest.h>

#include <iostream>
#include <sstream>
#include <string>

#include "core/diagnostics.hpp"
#include "model/model_yaml.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::test::source_path;

// Loads a model and returns what it wrote on stderr.
std::string load_capturing_stderr(const std::string& relative, dtsim::model::ModelSpec& m, dtsim::Diagnostics& diag)
{
  std::ostringstream captured;
  std::streambuf* saved = std::cerr.rdbuf(captured.rdbuf());
  m = dtsim::model::load_model(source_path(relative), diag);
  std::cerr.rdbuf(saved);
  return captured.str();
}

TEST(HfConfig, NamedAfterItsFolder)
{
  dtsim::Diagnostics diag;
  dtsim::model::ModelSpec m;
  EXPECT_EQ(load_capturing_stderr("tests/unit/data/hf/Meta-Llama-3-8B/config.json", m, diag), "");
  EXPECT_TRUE(diag.empty());
  EXPECT_EQ(m.name, "Meta-Llama-3-8B");
  EXPECT_EQ(m.kv_heads, 8);
}

TEST(HfConfig, NamedAfterNameOrPath)
{
  dtsim::Diagnostics diag;
  dtsim::model::ModelSpec m;
  load_capturing_stderr("tests/unit/data/hf/named/config.json", m, diag);
  EXPECT_TRUE(diag.empty());
  EXPECT_EQ(m.name, "Meta-Llama-3-8B-Instruct");
}

TEST(HfConfig, TypoGetsAWarning)
{
  dtsim::Diagnostics diag;
  dtsim::model::ModelSpec m;
  const std::string err = load_capturing_stderr("tests/unit/data/hf/typo/config.json", m, diag);
  EXPECT_TRUE(diag.empty());
  EXPECT_NE(err.find("warning: num_key_value_head: unknown key 'num_key_value_head'"), std::string::npos) << err;
  EXPECT_NE(err.find("did you mean 'num_key_value_heads'?"), std::string::npos) << err;
  EXPECT_EQ(m.kv_heads, m.heads);  // the misspelt key is not read: multi-head attention, as the warning says
}

}  // namespace
