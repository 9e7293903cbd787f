#pragma once
/// One number through a printf format ("%.1f ms", "%.3gB"), for the tables and reports that print figures.
#include <string>

namespace dtsim {

/// `v` written by std::snprintf with `printf_format`, which takes exactly one double; at most 63 characters.
std::string format_number(const char* printf_format, double v);

}  // namespace dtsim
