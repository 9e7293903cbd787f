#pragma once
/// A kind of system's own part of a hardware file, as its wing reads it (sim/systems/<kind>/): what the layers that
/// know no kind ask of it are the device's figures; the wing's own code reads the rest (CerebrasWaferHardware).
#include <string>

namespace dtsim::hardware {

class SystemHardware {
 public:
  virtual ~SystemHardware() = default;
  /// Peak FLOP/s of one device (a whole wafer) at a precision; 0 when the precision is not offered.
  virtual double peak_flops(const std::string& precision) const = 0;
  virtual double device_memory_bytes() const = 0;
  virtual double device_power_W() const = 0;
};

}  // namespace dtsim::hardware
