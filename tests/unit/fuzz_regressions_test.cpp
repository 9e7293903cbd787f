// Inputs recorded from fuzzing the loaders (tests/fuzz/regressions/, docs/hardening.md): each is read by the loader
// the fuzz target would pick, and must come back loaded or refused with a ConfigError, never with another exception
// (an internal error, exit 1) or a crash. The sanitized build (scripts/sanitize.sh) replays them under ASan and UBSan.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "../fuzz/load_any.hpp"
#include "test_paths.hpp"

namespace {

namespace fs = std::filesystem;

TEST(FuzzRegressions, EveryRecordedInputIsLoadedOrRefusedCleanly)
{
  const fs::path dir = dtsim::test::source_path("tests/fuzz/regressions");
  int inputs = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    ++inputs;
    try {
      dtsim::fuzz::load_any(entry.path().string(), text.str());
    } catch (const dtsim::ConfigError&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << entry.path() << ": " << e.what();
    }
  }
  EXPECT_GE(inputs, 3);
}

}  // namespace
