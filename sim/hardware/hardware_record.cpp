#include "hardware/hardware_record.hpp"

#include <stdexcept>

#include "hardware/hardware_kind.hpp"

namespace dtsim::hardware {

nlohmann::ordered_json hardware_record(const HardwareSpec& hw)
{
  const HardwareKind* kind = find_hardware_kind(hw.kind);
  if (!kind)
    throw std::logic_error("hardware_record: no kind of system registered as '" + hw.kind + "'");
  nlohmann::ordered_json r;
  r["file"] = hw.file;
  r["name"] = hw.name;
  r["kind"] = hw.kind;
  r["default_stack"] =
      hw.default_stack.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(hw.default_stack);
  const nlohmann::ordered_json sections = kind->sections_record(hw);
  for (const auto& [key, section] : sections.items())
    r[key] = section;
  return r;
}

}  // namespace dtsim::hardware
