#include "hardware/hardware_yaml.hpp"

#include "collectives/algorithm_registry.hpp"
#include "config/map_reader.hpp"

namespace dtsim::hardware {

using config::Dimension;
using config::MapReader;
namespace limits = config::limits;

static LinkSpec read_link(MapReader m)
{
  LinkSpec l;
  l.bw_Bps = m.quantity("bandwidth", Dimension::Bandwidth, true, limits::kBandwidth).value_or(0);
  l.latency_s = m.quantity("latency", Dimension::Time, true, limits::kLatency).value_or(0);
  l.goodput_Bps = m.quantity("goodput", Dimension::Bandwidth, false, limits::kBandwidth).value_or(l.bw_Bps);
  m.finish();
  return l;
}

static std::map<std::string, double> read_peaks(MapReader& parent);

CollectiveForce read_collective_force(MapReader& parent)
{
  CollectiveForce f;
  MapReader c = parent.map("collectives", false);
  f.algorithm = c.choice("algorithm", collectives::algorithm_choices(), false).value_or("");
  f.protocol = c.choice("protocol", collectives::protocol_choices(), false).value_or("");
  c.finish();
  return f;
}

static DeviceSpec read_device(MapReader m)
{
  DeviceSpec d;
  d.name = m.string("name", true).value_or("");
  d.peak_flops = read_peaks(m);
  d.memory_bytes = m.quantity("memory", Dimension::Bytes, true, limits::kCapacity).value_or(0);
  d.memory_bw_Bps = m.quantity("memory_bandwidth", Dimension::Bandwidth, true, limits::kBandwidth).value_or(0);
  d.power_W = m.quantity("power", Dimension::Power, false, limits::kPower).value_or(0);
  d.sm_count = m.integer("sm_count", false, limits::kSmCount).value_or(0);
  MapReader eff = m.map("efficiency", true);
  MapReader gemm = eff.map("gemm", true);
  d.gemm.max = gemm.number("max", true, 0.01, 1.0).value_or(1.0);
  d.gemm.half_area = gemm.number("half_area", true, 0, 1e12).value_or(0);
  d.gemm.area_exponent = gemm.number("area_exponent", false, 0.1, 10).value_or(1);
  d.gemm.half_k = gemm.number("half_k", true, 0, 1e6).value_or(0);
  gemm.finish();
  if (eff.has("gemm_fp8")) {
    MapReader g8 = eff.map("gemm_fp8", true);
    d.has_gemm_fp8 = true;
    d.gemm_fp8.max = g8.number("max", true, 0.01, 1.0).value_or(1.0);
    d.gemm_fp8.half_area = g8.number("half_area", true, 0, 1e12).value_or(0);
    d.gemm_fp8.area_exponent = g8.number("area_exponent", false, 0.1, 10).value_or(1);
    d.gemm_fp8.half_k = g8.number("half_k", true, 0, 1e6).value_or(0);
    g8.finish();
  }
  d.memory_efficiency = eff.number("memory", true, 0.01, 1.0).value_or(1.0);
  d.kernel_min_s = eff.quantity("kernel_min_time", Dimension::Time, true, limits::kLatency).value_or(0);
  eff.finish();
  m.finish();
  return d;
}

static std::map<std::string, double> read_peaks(MapReader& parent)
{
  std::map<std::string, double> peaks;
  MapReader peak = parent.map("peak_flops", true);
  for (const char* p : {"fp32", "tf32", "fp16", "bf16", "fp8"})
    if (auto v = peak.quantity(p, Dimension::FlopRate, false, limits::kFlopRate))
      peaks[p] = *v;
  if (peak.valid() && peaks.empty())
    parent.error("peak_flops", "expected at least one of fp32, tf32, fp16, bf16, fp8");
  peak.finish();
  return peaks;
}

// A wafer-scale system: the wafer, its weight store (MemoryX) and its broadcast/reduce tree (SwarmX).
static void read_wafer_system(MapReader& root, HardwareSpec& hw)
{
  MapReader w = root.map("wafer", true);
  auto& wf = hw.wafer;
  wf.name = w.string("name", true).value_or("");
  wf.cores = w.integer("cores", true, limits::kWaferCores).value_or(1);
  wf.sram_bytes = w.quantity("sram", Dimension::Bytes, true, limits::kCapacity).value_or(0);
  wf.sram_bw_Bps = w.quantity("sram_bandwidth", Dimension::Bandwidth, true, limits::kBandwidth).value_or(0);
  wf.fabric_bw_Bps = w.quantity("fabric_bandwidth", Dimension::Bandwidth, true, limits::kBandwidth).value_or(0);
  wf.peak_flops = read_peaks(w);
  MapReader gemm = w.map("core_gemm", true);
  wf.gemm_max_efficiency = gemm.number("max_efficiency", true, 0.001, 1.0).value_or(1.0);
  // Elements of a reduction per core; a core's 48 KB of SRAM holds 24,576 16-bit values (Lie, Hot Chips 34).
  wf.gemm_half_length = gemm.number("half_length", true, 0.0, 1e6).value_or(0);
  gemm.finish();
  wf.power_W = w.quantity("power", Dimension::Power, true, limits::kPower).value_or(0);
  MapReader mesh = w.map("mesh", true);
  wf.mesh_rows = int(mesh.integer("rows", true, limits::kMeshSide).value_or(1));
  wf.mesh_cols = int(mesh.integer("cols", true, limits::kMeshSide).value_or(1));
  wf.hop_latency_s = mesh.quantity("hop_latency", Dimension::Time, true, limits::kLatency).value_or(0);
  mesh.finish();
  MapReader io = w.map("io", true);
  wf.io_bw_Bps = io.quantity("bandwidth", Dimension::Bandwidth, true, limits::kBandwidth).value_or(0);
  wf.io_latency_s = io.quantity("latency", Dimension::Time, true, limits::kLatency).value_or(0);
  io.finish();
  w.finish();
  MapReader mx = root.map("memoryx", true);
  hw.memoryx.capacity_bytes = mx.quantity("capacity", Dimension::Bytes, true, limits::kCapacity).value_or(0);
  hw.memoryx.bandwidth_Bps = mx.quantity("bandwidth", Dimension::Bandwidth, true, limits::kBandwidth).value_or(0);
  hw.memoryx.update_bandwidth_Bps =
      mx.quantity("update_bandwidth", Dimension::Bandwidth, true, limits::kBandwidth).value_or(0);
  mx.finish();
  MapReader sx = root.map("swarmx", true);
  hw.swarmx.port_bw_Bps = sx.quantity("port_bandwidth", Dimension::Bandwidth, true, limits::kBandwidth).value_or(0);
  hw.swarmx.fan_out = int(sx.integer("fan_out", true, limits::kFanOut).value_or(2));
  hw.swarmx.latency_per_level_s = sx.quantity("latency_per_level", Dimension::Time, true, limits::kLatency).value_or(0);
  sx.finish();
  root.finish();
}

static HardwareSpec parse_hardware(const std::string& path, Diagnostics& diag, const std::vector<std::string>& sets);

HardwareSpec load_hardware(const std::string& path, Diagnostics& diag, const std::vector<std::string>& sets)
{
  HardwareSpec hw = parse_hardware(path, diag, sets);
  if (hw.wafer_scale)
    return hw;
  // A what-if on a link's bandwidth (--set / --vary) that leaves its goodput alone keeps the measured ratio of
  // the two: a faster link of the same kind loses the same share to its protocol.
  if (!sets.empty()) {
    Diagnostics scratch;
    const HardwareSpec file = parse_hardware(path, scratch, {});
    auto follow = [](LinkSpec& l, const LinkSpec& f) {
      if (l.bw_Bps != f.bw_Bps && l.goodput_Bps == f.goodput_Bps && f.bw_Bps > 0)
        l.goodput_Bps = f.goodput_Bps * l.bw_Bps / f.bw_Bps;
    };
    if (scratch.empty()) {
      follow(hw.node.nvlink, file.node.nvlink);
      follow(hw.network.nic, file.network.nic);
    }
  }
  for (auto [l, key] : {std::pair<const LinkSpec*, const char*>{&hw.node.nvlink, "node.nvlink.goodput"},
                        {&hw.network.nic, "network.nic.goodput"}})
    if (l->goodput_Bps > l->bw_Bps && l->bw_Bps > 0)
      diag.add({path, 0, 0}, key, "expected at most the link's bandwidth");
  return hw;
}

static HardwareSpec parse_hardware(const std::string& path, Diagnostics& diag, const std::vector<std::string>& sets)
{
  HardwareSpec hw;
  hw.file = path;
  auto file = config::YamlFile::load(path, diag);
  if (!file.ok())
    return hw;
  file.apply_overrides(sets, "hardware.", diag);
  MapReader root(file, file.root(), "", diag);
  hw.name = root.string("name", true).value_or("");
  root.accept({"description"});
  if (auto st = root.string("default_stack", false))
    hw.default_stack = file.resolve(*st);
  hw.kind = root.choice("kind", {kGpuCluster, kCerebrasWafer}, true).value_or("");
  if (hw.kind.empty()) {  // the sections to read depend on it: the missing or unknown kind is the one error
    root.accept({"device", "node", "network", "collectives", "wafer", "memoryx", "swarmx"});
    root.finish();
    return hw;
  }
  hw.wafer_scale = hw.kind == kCerebrasWafer;
  if (hw.wafer_scale) {
    read_wafer_system(root, hw);
    return hw;
  }
  hw.device = read_device(root.map("device", true));

  MapReader node = root.map("node", true);
  const auto node_devices = node.integer("devices", true, limits::kNodeDevices);
  hw.node.devices = static_cast<int>(node_devices.value_or(1));
  hw.node.nvlink = read_link(node.map("nvlink", true));
  hw.node.nvswitch_generation =
      static_cast<int>(node.integer("nvswitch_generation", false, limits::kNvSwitchGeneration).value_or(0));
  node.finish();

  MapReader net = root.map("network", true);
  const auto nics = net.integer("nics_per_node", true, limits::kNodeDevices);
  hw.network.nics_per_node = static_cast<int>(nics.value_or(1));
  hw.network.nic = read_link(net.map("nic", true));
  MapReader topo = net.map("topology", true);
  auto type = topo.choice("type", {"fat-tree", "rail-optimized"}, true);
  hw.network.topology = type && *type == "rail-optimized" ? Topology::RailOptimized : Topology::FatTree;
  hw.network.levels = static_cast<int>(topo.integer("levels", true, limits::kTopologyLevels).value_or(1));
  hw.network.switch_radix = static_cast<int>(topo.integer("switch_radix", true, limits::kSwitchRadix).value_or(2));
  hw.network.oversubscription = topo.number("oversubscription", false, 1.0, 64.0).value_or(1.0);
  topo.finish();
  net.finish();
  hw.collectives = read_collective_force(root);
  root.finish();

  // Compared only when both were read: a default must not cause a follow-on error.
  if (node_devices && nics && *nics > *node_devices)
    diag.add(net.where("nics_per_node"), "network.nics_per_node",
             "expected at most node.devices (" + std::to_string(hw.node.devices) + ") NICs, got " +
                 std::to_string(hw.network.nics_per_node));
  else if (node_devices && nics && *node_devices % *nics != 0)
    diag.add(net.where("nics_per_node"), "network.nics_per_node",
             "expected a divisor of node.devices (" + std::to_string(hw.node.devices) + "), got " +
                 std::to_string(hw.network.nics_per_node));
  return hw;
}

}  // namespace dtsim::hardware
