#include "core/format_number.hpp"

#include <cstdio>

namespace dtsim {

std::string format_number(const char* printf_format, double v)
{
  char b[64];
  std::snprintf(b, sizeof b, printf_format, v);
  return b;
}

}  // namespace dtsim
