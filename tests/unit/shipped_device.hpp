// A device as a shipped hardware file describes it, for tests that price kernels on real devices' figures.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "hardware/hardware_yaml.hpp"
#include "test_paths.hpp"

namespace dtsim::test {

inline hardware::DeviceSpec device_of(const std::string& file)
{
  Diagnostics diag;
  auto hw = hardware::load_hardware(source_path(file), diag);
  EXPECT_TRUE(diag.empty()) << file;
  return hw.device;
}

}  // namespace dtsim::test
