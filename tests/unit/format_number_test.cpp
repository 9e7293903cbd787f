// Numbers as the reports print them (core/format_number.hpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "core/format_number.hpp"

namespace {

using dtsim::format_thousands;

// A comma between each group of three digits from the right; none in three digits or fewer; the sign stays outside.
TEST(FormatThousands, GroupsThreeDigitsFromTheRight)
{
  EXPECT_EQ(format_thousands(0), "0");
  EXPECT_EQ(format_thousands(999), "999");
  EXPECT_EQ(format_thousands(1000), "1,000");
  EXPECT_EQ(format_thousands(30700), "30,700");
  EXPECT_EQ(format_thousands(1234567), "1,234,567");
  EXPECT_EQ(format_thousands(-100), "-100");
  EXPECT_EQ(format_thousands(-1000), "-1,000");
  EXPECT_EQ(format_thousands(-123456), "-123,456");
  EXPECT_EQ(format_thousands(std::numeric_limits<int64_t>::max()), "9,223,372,036,854,775,807");
  EXPECT_EQ(format_thousands(std::numeric_limits<int64_t>::min()), "-9,223,372,036,854,775,808");
}

}  // namespace
