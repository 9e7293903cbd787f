#include <gtest/gtest.h>
#include "core/version.hpp"
TEST(Version, IsSet) { EXPECT_STREQ(dtsim::kVersion, "0.1.0"); }
