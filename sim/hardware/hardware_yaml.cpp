#include "hardware/hardware_yaml.hpp"

#include "config/map_reader.hpp"

namespace dtsim::hardware {

using config::Dimension;
using config::MapReader;

static LinkSpec read_link(MapReader m)
{
  LinkSpec l;
  l.bw_Bps = m.quantity("bandwidth", Dimension::Bandwidth, true).value_or(0);
  l.latency_s = m.quantity("latency", Dimension::Time, true, true).value_or(0);
  l.efficiency = m.number("efficiency", false, 0.01, 1.0).value_or(1.0);
  m.finish();
  return l;
}

static DeviceSpec read_device(MapReader m)
{
  DeviceSpec d;
  d.name = m.string("name", true).value_or("");
  MapReader peak = m.map("peak_flops", true);
  for (const char* p : {"fp32", "tf32", "fp16", "bf16", "fp8"})
    if (auto v = peak.quantity(p, Dimension::FlopRate, false))
      d.peak_flops[p] = *v;
  if (peak.valid() && d.peak_flops.empty())
    m.error("peak_flops", "expected at least one of fp32, tf32, fp16, bf16, fp8");
  peak.finish();
  d.memory_bytes = m.quantity("memory", Dimension::Bytes, true).value_or(0);
  d.memory_bw_Bps = m.quantity("memory_bandwidth", Dimension::Bandwidth, true).value_or(0);
  d.power_W = m.quantity("power", Dimension::Power, false).value_or(0);
  MapReader eff = m.map("efficiency", true);
  MapReader gemm = eff.map("gemm", true);
  d.gemm.max = gemm.number("max", true, 0.01, 1.0).value_or(1.0);
  d.gemm.half_area = gemm.number("half_area", true, 0, 1e12).value_or(0);
  d.gemm.area_exponent = gemm.number("area_exponent", false, 0.1, 10).value_or(1);
  d.gemm.half_k = gemm.number("half_k", true, 0, 1e6).value_or(0);
  gemm.finish();
  d.memory_efficiency = eff.number("memory", true, 0.01, 1.0).value_or(1.0);
  d.kernel_min_s = eff.quantity("kernel_min_time", Dimension::Time, true, true).value_or(0);
  eff.finish();
  m.finish();
  return d;
}

HardwareSpec load_hardware(const std::string& path, Diagnostics& diag)
{
  HardwareSpec hw;
  hw.file = path;
  auto file = config::YamlFile::load(path, diag);
  if (!file.ok())
    return hw;
  MapReader root(file, file.root(), "", diag);
  hw.name = root.string("name", true).value_or("");
  root.accept({"description"});
  hw.device = read_device(root.map("device", true));

  MapReader node = root.map("node", true);
  hw.node.devices = static_cast<int>(node.integer("devices", true, 1).value_or(1));
  hw.node.nvlink = read_link(node.map("nvlink", true));
  node.finish();

  MapReader net = root.map("network", true);
  hw.network.nics_per_node = static_cast<int>(net.integer("nics_per_node", true, 1).value_or(1));
  hw.network.nic = read_link(net.map("nic", true));
  MapReader topo = net.map("topology", true);
  auto type = topo.choice("type", {"fat-tree", "rail-optimized"}, true);
  hw.network.topology = type && *type == "rail-optimized" ? Topology::RailOptimized : Topology::FatTree;
  hw.network.levels = static_cast<int>(topo.integer("levels", true, 1).value_or(1));
  hw.network.switch_radix = static_cast<int>(topo.integer("switch_radix", true, 2).value_or(2));
  hw.network.oversubscription = topo.number("oversubscription", false, 1.0, 64.0).value_or(1.0);
  topo.finish();
  net.finish();
  root.finish();

  if (hw.node.devices > 0 && hw.network.nics_per_node > hw.node.devices)
    diag.add(net.where("nics_per_node"), "network.nics_per_node",
             "expected at most node.devices (" + std::to_string(hw.node.devices) + ") NICs, got " +
                 std::to_string(hw.network.nics_per_node));
  else if (hw.node.devices % hw.network.nics_per_node != 0)
    diag.add(net.where("nics_per_node"), "network.nics_per_node",
             "expected a divisor of node.devices (" + std::to_string(hw.node.devices) + "), got " +
                 std::to_string(hw.network.nics_per_node));
  return hw;
}

}  // namespace dtsim::hardware
