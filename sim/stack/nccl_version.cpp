#include "stack/nccl_version.hpp"

#include <regex>

namespace dtsim::stack {

int nccl_version_code(const std::string& text)
{
  if (text == "unpublished")
    return 0;
  static const std::regex form(R"(([0-9])\.([0-9]{1,2})\.([0-9]{1,2})\+?)");
  std::smatch m;
  if (!std::regex_match(text, m, form))
    return -1;
  // NCCL_VERSION(X, Y, Z) of src/nccl.h.in for releases from 2.9: X * 10000 + Y * 100 + Z.
  return std::stoi(m[1]) * 10000 + std::stoi(m[2]) * 100 + std::stoi(m[3]);
}

}  // namespace dtsim::stack
