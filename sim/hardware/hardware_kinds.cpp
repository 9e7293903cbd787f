#include <stdexcept>
#include <utility>

#include "hardware/hardware_kind.hpp"

namespace dtsim::hardware {

namespace {

std::vector<std::pair<std::string, const HardwareKind*>>& registry()
{
  static std::vector<std::pair<std::string, const HardwareKind*>> kinds;
  return kinds;
}

}  // namespace

void register_hardware_kind(const std::string& name, const HardwareKind& kind)
{
  for (auto& [n, k] : registry())
    if (n == name) {
      k = &kind;
      return;
    }
  registry().push_back({name, &kind});
}

const HardwareKind* find_hardware_kind(const std::string& name)
{
  for (const auto& [n, k] : registry())
    if (n == name)
      return k;
  return nullptr;
}

std::vector<std::string> hardware_kind_names()
{
  if (registry().empty())
    throw std::logic_error("no kind of system is registered: call systems::install() before reading inputs");
  std::vector<std::string> names;
  for (const auto& [n, k] : registry())
    names.push_back(n);
  return names;
}

}  // namespace dtsim::hardware
