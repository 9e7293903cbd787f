// libFuzzer target over dtsim's input loaders: each input is written to a file and read, the way `dtsim validate`
// reads it, as a scenario when it names a hardware file ("hardware:"), else as a model when it has a model key
// ("hidden_size", "num_hidden_layers" or "model_type"), else as a software stack when it has a stack's section,
// else as a hardware description (tests/fuzz/load_any.hpp). (Reading every input with all the loaders made each run
// three times as slow, mostly spent on did-you-mean suggestions for the keys of the
// wrong kind of file.) Every bad input must come back as a ConfigError (exit 2 in the program); anything else that
// escapes is a finding, and so is every crash, hang, leak or sanitizer report. Lines "#set KEY=VALUE" of a scenario
// (YAML comments) are also applied as --set overrides.
//
// The input file sits in scenarios/ of a scratch copy of the repository's layout (models/ and hardware/ are links
// to the source tree's), so that the shipped scenarios, used as seeds, find the files they name.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/diagnostics.hpp"
#include "load_any.hpp"
#include "systems/system_kinds.hpp"

namespace {

namespace fs = std::filesystem;

// The scratch tree, made once per process.
const std::string& input_path()
{
  static const std::string path = [] {
    char dir[] = "/tmp/dtsim-fuzz-XXXXXX";
    if (!mkdtemp(dir)) {
      std::perror("dtsim_fuzz_inputs: mkdtemp");
      std::abort();
    }
    const fs::path root(dir);
    static const std::string made = root.string();
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(made, ec);
    });
    fs::create_directory(root / "scenarios");
    for (const char* d : {"models", "hardware"})
      fs::create_directory_symlink(fs::path(DTSIM_SOURCE_DIR) / d, root / d);
    return (root / "scenarios" / "input.yaml").string();
  }();
  return path;
}


}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
  dtsim::systems::install();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string& path = input_path();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
  }
  // A ConfigError is the expected answer to bad input; any other exception is reported and aborts.
  try {
    dtsim::fuzz::load_any(path, text);
  } catch (const dtsim::ConfigError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtsim_fuzz_inputs: the loader let through %s\n", e.what());
    std::abort();
  }
  return 0;
}
