#pragma once
/// Small tests on text that the readers and the commands share.
#include <string>

namespace dtsim::config {

inline bool starts_with(const std::string& s, const std::string& head) { return s.compare(0, head.size(), head) == 0; }

inline bool ends_with(const std::string& s, const std::string& tail)
{
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace dtsim::config
