#include "hardware/hardware_spec.hpp"

namespace dtsim::hardware {

double HardwareSpec::peak_flops(const std::string& precision) const
{
  if (system)
    return system->peak_flops(precision);
  auto it = device.peak_flops.find(precision);
  return it == device.peak_flops.end() ? 0.0 : it->second;
}

}  // namespace dtsim::hardware
