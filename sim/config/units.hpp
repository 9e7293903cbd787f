#pragma once
/// Parsing of physical quantities written with explicit units ("600 GB/s", "200 Gb/s", "1.5 us", "80 GiB",
/// "312 TFLOP/s", "400 W"). Values come back in SI base units: seconds, bytes, bytes/s, FLOP/s, watts.
#include <optional>
#include <string>

namespace dtsim::config {

/// Count: a plain number with an optional scale (K, M, B or G, T, P), such as training tokens '15T'.
enum class Dimension { Time, Bytes, Bandwidth, FlopRate, Power, Count };

/// Human name of a dimension with an example, for error messages ("a bandwidth such as '600 GB/s'").
std::string describe(Dimension d);

struct QuantityParse {
  std::optional<double> value;  ///< in SI units when the text parsed
  std::string error;            ///< what was wrong otherwise ("unknown unit 'GB/z'")
};

/// Parses "<number> <unit>" (the space is optional). A bare number is an error (units are mandatory), except for a
/// Count, whose scale is optional.
QuantityParse parse_quantity(const std::string& text, Dimension d);

/// Formats a value of the dimension with a readable unit (for tables and messages), e.g. "1.5 us", "80 GiB", to
/// `digits` significant digits (3 in reports; more where a value must read back as the file gave it, as in
/// `dtsim hardware FILE`).
std::string format_quantity(double value_si, Dimension d, int digits = 3);

}  // namespace dtsim::config
