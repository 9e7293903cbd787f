// Checked products of plan sizes (core/checked_math.hpp): exact where the product fits in int64_t, nullopt where
// it does not, including products whose partial product overflows before a later factor would bring it back.
#include "core/checked_math.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace {

using dtsim::checked_mul;
using dtsim::checked_product;
using dtsim::product_text;

TEST(CheckedMath, MulExactWhenItFits)
{
  EXPECT_EQ(checked_mul(8, 16), 128);
  EXPECT_EQ(checked_mul(int64_t(1) << 31, int64_t(1) << 31), int64_t(1) << 62);
  EXPECT_EQ(checked_mul(-3, 7), -21);
  EXPECT_EQ(checked_mul(INT64_MAX, 1), INT64_MAX);
}

TEST(CheckedMath, MulOverflowIsNullopt)
{
  // tp 2^62 times pp 4: wraps to 0 in plain arithmetic (the SIGFPE of issue 14).
  EXPECT_EQ(checked_mul(int64_t(1) << 62, 4), std::nullopt);
  EXPECT_EQ(checked_mul(INT64_MAX, 2), std::nullopt);
  EXPECT_EQ(checked_mul(INT64_MIN, -1), std::nullopt);
}

TEST(CheckedMath, ProductOfPlanSizes)
{
  EXPECT_EQ(checked_product({8, 16, 8, 1}), 1024);
  EXPECT_EQ(checked_product({}), 1);
  // 2^20 four times: 2^80.
  const int64_t m = int64_t(1) << 20;
  EXPECT_EQ(checked_product({m, m, m, m}), std::nullopt);
  // dp 2^62 + 2 with tp 4: wraps to 8 in plain arithmetic, which equalled the devices of issue 14's case.
  EXPECT_EQ(checked_product({(int64_t(1) << 62) + 2, 4}), std::nullopt);
  // An overflowing partial product is caught even when a later factor is 0.
  EXPECT_EQ(checked_product({INT64_MAX, 2, 0}), std::nullopt);
}

TEST(CheckedMath, ProductText)
{
  EXPECT_EQ(product_text(int64_t(1024)), "1024");
  EXPECT_EQ(product_text(std::nullopt), "more than 9223372036854775807");
}

}  // namespace
