// Input files are checked with stat() before they are opened (config/input_file.hpp): a named pipe, a device, a
// directory or a file over 16 MiB is refused with its reason, for the scenario as for the files it names. A
// regression on the pipe would block forever: alarm() turns that into a failure of this test.
#include "config/input_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/diagnostics.hpp"
#include "scenario/scenario_spec.hpp"

namespace fs = std::filesystem;

namespace {

using dtsim::config::input_file_problem;
using dtsim::config::kMaxInputBytes;
using dtsim::config::read_input_file;

// A fresh directory under the system's temporary directory, removed afterwards.
class InputFileTest : public ::testing::Test {
 protected:
  void SetUp() override
  {
    std::string t = (fs::temp_directory_path() / "dtsim-input-file-XXXXXX").string();
    ASSERT_NE(mkdtemp(t.data()), nullptr);
    dir_ = t;
  }
  void TearDown() override
  {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path dir_;
};

// The message of load_scenario on `path`, or "" when it loads.
std::string load_error(const std::string& path)
{
  try {
    dtsim::scenario::load_scenario(path, {});
  } catch (const dtsim::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST_F(InputFileTest, RegularFileIsRead)
{
  const fs::path p = dir_ / "a.yaml";
  std::ofstream(p) << "a: 1\n";
  std::string text;
  EXPECT_EQ(read_input_file(p.string(), text), "");
  EXPECT_EQ(text, "a: 1\n");
}

TEST_F(InputFileTest, MissingFile)
{
  EXPECT_EQ(input_file_problem((dir_ / "none.yaml").string()), "cannot read file: it does not exist");
}

TEST_F(InputFileTest, NamedPipeIsRefusedWithoutBlocking)
{
  const fs::path p = dir_ / "pipe.yaml";
  ASSERT_EQ(mkfifo(p.c_str(), 0600), 0);
  alarm(20);  // a read of the pipe would block forever: fail instead
  EXPECT_EQ(input_file_problem(p.string()), "cannot read file: it is a named pipe, not a regular file");
  EXPECT_EQ(load_error(p.string()),
            p.string() + ": error: cannot read file: it is a named pipe, not a regular file");
  alarm(0);
}

TEST_F(InputFileTest, DeviceIsRefused)
{
  ASSERT_TRUE(fs::exists("/dev/zero"));
  EXPECT_EQ(input_file_problem("/dev/zero"), "cannot read file: it is a device, not a regular file");
  EXPECT_EQ(load_error("/dev/zero"), "/dev/zero: error: cannot read file: it is a device, not a regular file");
}

TEST_F(InputFileTest, DirectoryIsRefused)
{
  EXPECT_EQ(input_file_problem(dir_.string()), "cannot read file: it is a directory");
  EXPECT_EQ(load_error(dir_.string()), dir_.string() + ": error: cannot read file: it is a directory");
}

TEST_F(InputFileTest, OversizedFileIsRefused)
{
  const fs::path p = dir_ / "big.yaml";
  std::ofstream(p) << "a: 1\n";
  fs::resize_file(p, kMaxInputBytes + 1);  // sparse: nothing is written
  EXPECT_EQ(input_file_problem(p.string()),
            "cannot read file: it has 16777217 bytes, more than the 16 MiB an input file may have");
  fs::resize_file(p, kMaxInputBytes);
  EXPECT_EQ(input_file_problem(p.string()), "");
}

}  // namespace
