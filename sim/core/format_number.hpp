#pragma once
/// Numbers as the tables and reports print them: through a printf format ("%.1f ms", "%.3gB"), or an integer with
/// its thousands grouped ("30,700").
#include <cstdint>
#include <string>

namespace dtsim {

/// `v` written by std::snprintf with `printf_format`, which takes exactly one double; at most 63 characters.
std::string format_number(const char* printf_format, double v);

/// `v` in decimal with a comma between each group of three digits from the right ("-1,234,567", "999"), the same on
/// every machine: no locale is read (std::locale's grouping and fmt's `{:L}` follow the global one).
std::string format_thousands(int64_t v);

}  // namespace dtsim
