// Quantities with explicit units: SI prefixes (1 k = 1e3), IEC binary prefixes (1 Ki = 1024), 8 bits per byte
// (so 200 Gb/s = 25e9 B/s). Expected values computed here; a bare number, an unknown unit or an empty value is an
// error whose text says what was expected.
// units.hpp comes first: its parameter name `si_value` is a macro of glibc's <signal.h>, which gtest.h pulls in.
#include "config/units.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace {

using dtsim::config::Dimension;
using dtsim::config::parse_quantity;

double parse_ok(const std::string& text, Dimension d)
{
  auto q = parse_quantity(text, d);
  EXPECT_TRUE(q.value.has_value()) << "'" << text << "': " << q.error;
  EXPECT_TRUE(q.error.empty()) << q.error;
  return q.value.value_or(std::nan(""));
}

std::string parse_error(const std::string& text, Dimension d)
{
  auto q = parse_quantity(text, d);
  EXPECT_FALSE(q.value.has_value()) << "'" << text << "' parsed as " << q.value.value_or(0);
  EXPECT_FALSE(q.error.empty());
  return q.error;
}

void expect_all(Dimension d, const std::vector<std::pair<std::string, double>>& cases)
{
  for (const auto& [text, si] : cases)
    EXPECT_DOUBLE_EQ(parse_ok(text, d), si) << "'" << text << "'";
}

TEST(ParseQuantity, BriefExamples)
{
  EXPECT_DOUBLE_EQ(parse_ok("200 Gb/s", Dimension::Bandwidth), 25e9);
  EXPECT_DOUBLE_EQ(parse_ok("80 GiB", Dimension::Bytes), 80.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parse_ok("1.5 us", Dimension::Time), 1.5e-6);
  EXPECT_DOUBLE_EQ(parse_ok("312 TFLOP/s", Dimension::FlopRate), 312e12);
  EXPECT_DOUBLE_EQ(parse_ok("600 GB/s", Dimension::Bandwidth), 600e9);
  EXPECT_DOUBLE_EQ(parse_ok("400 W", Dimension::Power), 400.0);
}

TEST(ParseQuantity, Time)
{
  expect_all(Dimension::Time, {{"2 s", 2.0}, {"3 ms", 3e-3}, {"1.5 us", 1.5e-6}, {"250 ns", 250e-9},
                               {"0 us", 0.0}, {"1.5us", 1.5e-6}, {"  7 ms  ", 7e-3}, {"1e3 ns", 1e-6},
                               {"1.5 \xC2\xB5s", 1.5e-6}});  // the micro sign is accepted for us
}

TEST(ParseQuantity, Bytes)
{
  const double Ki = 1024.0;
  expect_all(Dimension::Bytes, {{"512 B", 512.0},
                                {"1 KB", 1e3},
                                {"1 MB", 1e6},
                                {"40 GB", 40e9},
                                {"2 TB", 2e12},
                                {"1 PB", 1e15},
                                {"4 KiB", 4 * Ki},
                                {"25 MiB", 25 * Ki * Ki},
                                {"80 GiB", 80 * Ki * Ki * Ki},
                                {"1 TiB", Ki * Ki * Ki * Ki},
                                {"1 PiB", Ki * Ki * Ki * Ki * Ki}});
}

TEST(ParseQuantity, BandwidthBytesAndBits)
{
  expect_all(Dimension::Bandwidth, {{"1 B/s", 1.0},
                                    {"1 KB/s", 1e3},
                                    {"1 MB/s", 1e6},
                                    {"300 GB/s", 300e9},
                                    {"2 TB/s", 2e12},
                                    {"1 PB/s", 1e15},
                                    {"8 b/s", 1.0},
                                    {"8 Kb/s", 1e3},
                                    {"8 Mb/s", 1e6},
                                    {"200 Gb/s", 25e9},
                                    {"400 Gb/s", 50e9},
                                    {"1.6 Tb/s", 200e9},
                                    {"8 Pb/s", 1e15},
                                    {"25 GBps", 25e9},
                                    {"200 Gbps", 25e9},
                                    {"8 bps", 1.0}});
}

TEST(ParseQuantity, FlopRate)
{
  expect_all(Dimension::FlopRate, {{"1 FLOP/s", 1.0},
                                   {"5 GFLOP/s", 5e9},
                                   {"312 TFLOP/s", 312e12},
                                   {"1.979 PFLOP/s", 1.979e15},
                                   {"1 EFLOP/s", 1e18},
                                   {"19.5 TFLOPS", 19.5e12}});
}

TEST(ParseQuantity, Power) { expect_all(Dimension::Power, {{"700 W", 700.0}, {"10.2 kW", 10.2e3}, {"2 MW", 2e6}}); }

TEST(ParseQuantity, BareNumberIsAnError)
{
  for (Dimension d : {Dimension::Time, Dimension::Bytes, Dimension::Bandwidth, Dimension::FlopRate, Dimension::Power}) {
    std::string e = parse_error("200", d);
    EXPECT_NE(e.find("bare number '200'"), std::string::npos) << e;
    EXPECT_NE(e.find("units are mandatory"), std::string::npos) << e;
    EXPECT_NE(e.find(dtsim::config::describe(d)), std::string::npos) << e;  // says what was expected
  }
}

TEST(ParseQuantity, UnknownUnitIsAnError)
{
  std::string e = parse_error("600 GB/z", Dimension::Bandwidth);
  EXPECT_NE(e.find("unknown unit 'GB/z'"), std::string::npos) << e;
  EXPECT_NE(e.find("600 GB/s"), std::string::npos) << "should show an example: " << e;
  // A unit of another dimension is unknown in this one.
  e = parse_error("1.5 us", Dimension::Bandwidth);
  EXPECT_NE(e.find("unknown unit 'us'"), std::string::npos) << e;
  e = parse_error("80 GiB", Dimension::Time);
  EXPECT_NE(e.find("unknown unit 'GiB'"), std::string::npos) << e;
  // Case matters: 'gb/s' is neither bits nor bytes.
  e = parse_error("200 gb/s", Dimension::Bandwidth);
  EXPECT_NE(e.find("unknown unit 'gb/s'"), std::string::npos) << e;
}

TEST(ParseQuantity, EmptyAndNonNumericAreErrors)
{
  for (const std::string& text : {std::string(""), std::string("   ")}) {
    std::string e = parse_error(text, Dimension::Bytes);
    EXPECT_NE(e.find("empty value"), std::string::npos) << e;
    EXPECT_NE(e.find("80 GiB"), std::string::npos) << e;
  }
  std::string e = parse_error("GB/s", Dimension::Bandwidth);
  EXPECT_NE(e.find("got 'GB/s'"), std::string::npos) << e;
  e = parse_error("fast", Dimension::Time);
  EXPECT_NE(e.find("got 'fast'"), std::string::npos) << e;
}

TEST(ParseQuantity, NonFiniteIsAnError)
{
  std::string e = parse_error("inf GB/s", Dimension::Bandwidth);
  EXPECT_NE(e.find("finite"), std::string::npos) << e;
  e = parse_error("nan us", Dimension::Time);
  EXPECT_NE(e.find("finite"), std::string::npos) << e;
}

// format_quantity prints three significant digits with a unit that parse_quantity reads back.
TEST(FormatQuantity, RoundTripsThroughParse)
{
  using dtsim::config::format_quantity;
  const std::vector<std::pair<Dimension, double>> cases = {
      {Dimension::Time, 1.5e-6},      {Dimension::Time, 3.25e-3},        {Dimension::Time, 2.5},
      {Dimension::Time, 2770},        {Dimension::Time, 11124},          {Dimension::Time, 3.1e5},
      {Dimension::Time, 1.2e8},
      {Dimension::Bytes, 80.0 * 1073741824.0}, {Dimension::Bytes, 512},
      {Dimension::Bytes, 25.0 * 1048576}, {Dimension::Bandwidth, 25e9},  {Dimension::Bandwidth, 1.7e12},
      {Dimension::FlopRate, 312e12},  {Dimension::FlopRate, 1.979e15},  {Dimension::Power, 400},
      {Dimension::Power, 10.2e3}};
  for (const auto& [d, v] : cases) {
    const std::string text = format_quantity(v, d);
    auto q = parse_quantity(text, d);
    ASSERT_TRUE(q.value.has_value()) << "'" << text << "' does not parse back: " << q.error;
    EXPECT_NEAR(*q.value / v, 1.0, 5e-3) << "'" << text << "'";
  }
  EXPECT_EQ(format_quantity(80.0 * 1073741824.0, Dimension::Bytes), "80 GiB");
  EXPECT_EQ(format_quantity(25e9, Dimension::Bandwidth), "25 GB/s");
  EXPECT_EQ(format_quantity(1.5e-6, Dimension::Time), "1.5 us");
}

// With six digits asked for (`dtsim hardware FILE`), a hardware file's figures read back as written, in a unit a file
// writes: MI300X's 163.4 TFLOP/s, not "163 TFLOP/s" nor 163400000000000.0.
TEST(FormatQuantity, SixDigitsReadBackAsWritten)
{
  using dtsim::config::format_quantity;
  EXPECT_EQ(format_quantity(163.4e12, Dimension::FlopRate, 6), "163.4 TFLOP/s");
  EXPECT_EQ(format_quantity(206158430208.0, Dimension::Bytes, 6), "192 GiB");
  EXPECT_EQ(format_quantity(5.3e12, Dimension::Bandwidth, 6), "5.3 TB/s");
  EXPECT_EQ(format_quantity(2e-6, Dimension::Time, 6), "2 us");
  EXPECT_EQ(format_quantity(12.5, Dimension::Time, 6), "12.5 s");
  EXPECT_EQ(format_quantity(2770, Dimension::Time, 6), "46.1667 min");
  EXPECT_EQ(format_quantity(163.4e12, Dimension::FlopRate), "163 TFLOP/s");  // three digits in reports, as before
}

// Durations read as durations past a minute: a checkpoint write of 2,770 s was printed "2.77e+03 s" (qa15).
TEST(FormatQuantity, LongDurationsInMinutesHoursAndDays)
{
  using dtsim::config::format_quantity;
  EXPECT_EQ(format_quantity(2770, Dimension::Time), "46.2 min");
  EXPECT_EQ(format_quantity(11124, Dimension::Time), "3.09 h");
  EXPECT_EQ(format_quantity(3.1e5, Dimension::Time), "3.59 d");
  EXPECT_EQ(format_quantity(1.2e8, Dimension::Time), "1389 d");
  EXPECT_EQ(format_quantity(59.5, Dimension::Time), "59.500 s");
}

// One scale-picking rule for every dimension; durations alone print 1,000 or more of their unit in whole units.
// The cases where that differs from the other dimensions, byte for byte as printed before the rule was shared.
TEST(FormatQuantity, WholeUnitsPastAThousandForDurationsOnly)
{
  using dtsim::config::format_quantity;
  EXPECT_EQ(format_quantity(1000 * 86400.0, Dimension::Time), "1000 d");
  EXPECT_EQ(format_quantity(-1.2e8, Dimension::Time), "-1389 d");
  EXPECT_EQ(format_quantity(1.2e8, Dimension::Time, 6), "1389 d");  // whole units whatever the digits
  EXPECT_EQ(format_quantity(999.4 * 86400, Dimension::Time), "999 d");
  EXPECT_EQ(format_quantity(999.6 * 86400, Dimension::Time), "1e+03 d");  // below 1,000 days: three digits
  EXPECT_EQ(format_quantity(59.99 * 60, Dimension::Time), "60 min");
  EXPECT_EQ(format_quantity(1389e15, Dimension::Count), "1.39e+03 P");  // other dimensions keep the exponent
  EXPECT_EQ(format_quantity(2048.0 * 1099511627776.0, Dimension::Bytes), "2.05e+03 TiB");
  EXPECT_EQ(format_quantity(0.5, Dimension::Power), "0.5 W");  // below every scale: the base unit
}

// Below a microsecond the value must be scaled to nanoseconds: 42e-9 s is "42 ns", not "4.2e-08 ns".
TEST(FormatQuantity, NanosecondsAreScaled)
{
  using dtsim::config::format_quantity;
  EXPECT_EQ(format_quantity(42e-9, Dimension::Time), "42 ns");
  auto q = parse_quantity(format_quantity(500e-9, Dimension::Time), Dimension::Time);
  ASSERT_TRUE(q.value.has_value());
  EXPECT_NEAR(*q.value / 500e-9, 1.0, 5e-3) << format_quantity(500e-9, Dimension::Time);
}

}  // namespace
