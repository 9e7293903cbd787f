#include "hardware/hardware_spec.hpp"

namespace dtsim::hardware {

double WaferSpec::tile_link_bw_Bps() const
{
  if (cores <= 0 || tiles() <= 0)
    return 0;
  const double per_port = fabric_bw_Bps / (double(cores) * 4.0);
  const double cores_per_tile = double(cores) / double(tiles());
  return per_port * std::sqrt(cores_per_tile);  // a square tile has sqrt(cores) cores along each edge
}

double HardwareSpec::peak_flops(const std::string& precision) const
{
  const auto& table = wafer_scale ? wafer.peak_flops : device.peak_flops;
  auto it = table.find(precision);
  return it == table.end() ? 0.0 : it->second;
}

}  // namespace dtsim::hardware
