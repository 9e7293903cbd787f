#include "config/units.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "config/suggest.hpp"

namespace dtsim::config {

std::string describe(Dimension d)
{
  switch (d) {
    case Dimension::Time: return "a time such as '1.5 us' or '30 min' (units d, h, min, s, ms, us, ns)";
    case Dimension::Bytes: return "a size such as '80 GiB' (units B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)";
    case Dimension::Bandwidth:
      return "a bandwidth such as '600 GB/s' or '200 Gb/s' (bytes: B/s, KB/s, MB/s, GB/s, TB/s; bits: b/s, Kb/s, Mb/s, "
             "Gb/s, Tb/s)";
    case Dimension::FlopRate: return "a compute rate such as '312 TFLOP/s' (units FLOP/s, GFLOP/s, TFLOP/s, PFLOP/s)";
    case Dimension::Power: return "a power such as '400 W' (units W, kW, MW)";
    case Dimension::Count: return "a count such as '15T' or '2.5e12' (scales K, M, B or G, T, P)";
  }
  return "a quantity";
}

namespace {

const std::map<std::string, double>& unit_table(Dimension d)
{
  static const std::map<std::string, double> time = {{"d", 86400.0}, {"h", 3600.0}, {"min", 60.0}, {"s", 1.0},
                                                      {"ms", 1e-3},     {"us", 1e-6},    {"ns", 1e-9}};
  static const std::map<std::string, double> bytes = {
      {"B", 1.0},       {"KB", 1e3},           {"MB", 1e6},           {"GB", 1e9},           {"TB", 1e12},
      {"PB", 1e15},     {"KiB", 1024.0},       {"MiB", 1048576.0},    {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
      {"PiB", 1125899906842624.0}};
  static const std::map<std::string, double> bandwidth = {
      {"B/s", 1.0},    {"KB/s", 1e3},    {"MB/s", 1e6},    {"GB/s", 1e9},    {"TB/s", 1e12},   {"PB/s", 1e15},
      {"b/s", 0.125},  {"Kb/s", 125.0},  {"Mb/s", 1.25e5}, {"Gb/s", 1.25e8}, {"Tb/s", 1.25e11}, {"Pb/s", 1.25e14},
      {"Bps", 1.0},    {"KBps", 1e3},    {"MBps", 1e6},    {"GBps", 1e9},    {"TBps", 1e12},
      {"bps", 0.125},  {"Kbps", 125.0},  {"Mbps", 1.25e5}, {"Gbps", 1.25e8}, {"Tbps", 1.25e11}};
  static const std::map<std::string, double> flops = {
      {"FLOP/s", 1.0},    {"GFLOP/s", 1e9},  {"TFLOP/s", 1e12}, {"PFLOP/s", 1e15}, {"EFLOP/s", 1e18},
      {"FLOPS", 1.0},     {"GFLOPS", 1e9},   {"TFLOPS", 1e12},  {"PFLOPS", 1e15},  {"EFLOPS", 1e18}};
  static const std::map<std::string, double> power = {{"W", 1.0}, {"kW", 1e3}, {"MW", 1e6}};
  static const std::map<std::string, double> count = {{"", 1.0},   {"K", 1e3},  {"M", 1e6}, {"B", 1e9},
                                                      {"G", 1e9},  {"T", 1e12}, {"P", 1e15}};
  switch (d) {
    case Dimension::Time: return time;
    case Dimension::Bytes: return bytes;
    case Dimension::Bandwidth: return bandwidth;
    case Dimension::FlopRate: return flops;
    case Dimension::Power: return power;
    case Dimension::Count: return count;
  }
  return time;
}

std::string trim(const std::string& s)
{
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

}  // namespace

QuantityParse parse_quantity(const std::string& raw, Dimension d)
{
  const std::string text = trim(raw);
  if (text.empty())
    return {std::nullopt, "expected " + describe(d) + ", got an empty value"};
  const char* begin = text.c_str();
  char* end = nullptr;
  double number = std::strtod(begin, &end);
  if (end == begin)
    return {std::nullopt, "expected " + describe(d) + ", got " + excerpt(text)};
  std::string unit = trim(std::string(end));
  if (unit.empty() && d != Dimension::Count)
    return {std::nullopt, "expected " + describe(d) + ", got bare number " + excerpt(text) + " (units are mandatory)"};
  if (!std::isfinite(number))
    return {std::nullopt, "expected a finite number, got " + excerpt(text)};
  // "us" is the canonical micro; accept the micro sign as well
  if (unit == "\xC2\xB5s")
    unit = "us";
  const auto& table = unit_table(d);
  auto it = table.find(unit);
  if (it == table.end())
    return {std::nullopt, "unknown unit " + excerpt(unit) + " in " + excerpt(text) + ": expected " + describe(d)};
  return {number * it->second, ""};
}

std::string format_quantity(double v, Dimension d, int digits)
{
  char buf[64];
  // In the largest of `scales` the value reaches (else in `base`), to `digits` significant digits; with
  // `whole_past_1000`, 1,000 or more of the unit in whole units ("1389 d", not "1.39e+03 d").
  auto pick = [&](std::initializer_list<std::pair<double, const char*>> scales, const char* base,
                  bool whole_past_1000 = false) {
    double in_unit = v;
    const char* name = base;
    for (auto [scale, unit] : scales)
      if (std::fabs(v) >= scale) {
        in_unit = v / scale;
        name = unit;
        break;
      }
    if (whole_past_1000 && std::fabs(in_unit) >= 1000)
      std::snprintf(buf, sizeof buf, "%.0f %s", in_unit, name);
    else
      std::snprintf(buf, sizeof buf, "%.*g %s", digits, in_unit, name);
    return std::string(buf);
  };
  switch (d) {
    case Dimension::Time:
      // Durations past a minute in minutes, hours and days, as people say them ("46.2 min", not "2.77e+03 s");
      // three digits, no exponent past 1,000 days.
      if (std::fabs(v) >= 60.0)
        return pick({{86400.0, "d"}, {3600.0, "h"}, {60.0, "min"}}, "min", true);
      // Seconds with three decimals in reports ("4.460 s"); with more digits asked for, those significant digits.
      if (std::fabs(v) >= 1.0 || v == 0.0) {
        if (digits > 3)
          std::snprintf(buf, sizeof buf, "%.*g s", digits, v);
        else
          std::snprintf(buf, sizeof buf, "%.3f s", v);
        return buf;
      }
      if (std::fabs(v) >= 1e-6)
        return pick({{1e-3, "ms"}, {1e-6, "us"}}, "us");
      std::snprintf(buf, sizeof buf, "%.*g ns", digits, v * 1e9);
      return buf;
    case Dimension::Bytes:
      return pick({{1099511627776.0, "TiB"}, {1073741824.0, "GiB"}, {1048576.0, "MiB"}, {1024.0, "KiB"}}, "B");
    case Dimension::Bandwidth: return pick({{1e12, "TB/s"}, {1e9, "GB/s"}, {1e6, "MB/s"}, {1e3, "KB/s"}}, "B/s");
    case Dimension::FlopRate:
      return pick({{1e15, "PFLOP/s"}, {1e12, "TFLOP/s"}, {1e9, "GFLOP/s"}}, "FLOP/s");
    case Dimension::Power: return pick({{1e6, "MW"}, {1e3, "kW"}}, "W");
    case Dimension::Count:
      return pick({{1e15, "P"}, {1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}}, "");
  }
  return std::to_string(v);
}

}  // namespace dtsim::config
