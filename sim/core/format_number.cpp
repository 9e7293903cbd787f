#include "core/format_number.hpp"

#include <cstdio>
#include <string>

namespace dtsim {

std::string format_number(const char* printf_format, double v)
{
  char b[64];
  std::snprintf(b, sizeof b, printf_format, v);
  return b;
}

std::string format_thousands(int64_t v)
{
  std::string digits = std::to_string(v);
  const size_t first_digit = v < 0 ? 1 : 0;
  for (size_t i = digits.size(); i > first_digit + 3; i -= 3)
    digits.insert(i - 3, ",");
  return digits;
}

}  // namespace dtsim
