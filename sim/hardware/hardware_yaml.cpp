#include "hardware/hardware_yaml.hpp"

#include "config/map_reader.hpp"
#include "hardware/hardware_keys.hpp"

namespace dtsim::hardware {

using config::Dimension;
using config::MapReader;
namespace limits = config::limits;

namespace k = keys;

static LinkSpec read_link(MapReader m)
{
  LinkSpec l;
  l.bw_Bps = m.value(k::kLinkBandwidth);
  l.latency_s = m.value(k::kLinkLatency);
  l.goodput_Bps = m.quantity(k::kLinkGoodput).value_or(l.bw_Bps);
  m.finish();
  return l;
}

static std::map<std::string, double> read_peaks(MapReader& parent)
{
  std::map<std::string, double> peaks;
  MapReader peak = parent.map(k::kPeakFlops);
  for (const config::Key& p : k::peak_flops_keys())
    if (auto v = peak.quantity(p))
      peaks[p.name] = *v;
  if (peak.valid() && peaks.empty())
    parent.error(k::kPeakFlops.name, "expected at least one of fp32, tf32, fp16, bf16, fp8");
  peak.finish();
  return peaks;
}

CollectiveForce read_collective_force(MapReader& parent)
{
  CollectiveForce f;
  MapReader c = parent.map(k::kCollectives);
  f.algorithm = c.choice(k::kCollectiveAlgorithm).value_or("");
  f.protocol = c.choice(k::kCollectiveProtocol).value_or("");
  c.finish();
  return f;
}

static GemmEfficiency read_gemm(MapReader m)
{
  GemmEfficiency g;
  g.max = m.value(k::kGemmMax);
  g.half_area = m.value(k::kGemmHalfArea);
  g.area_exponent = m.value(k::kGemmAreaExponent);
  g.half_k = m.value(k::kGemmHalfK);
  m.finish();
  return g;
}

static DeviceSpec read_device(MapReader m)
{
  DeviceSpec d;
  d.name = m.string(k::kDeviceName).value_or("");
  d.peak_flops = read_peaks(m);
  d.memory_bytes = m.value(k::kMemory);
  d.memory_bw_Bps = m.value(k::kMemoryBandwidth);
  d.power_W = m.value(k::kPower);
  d.sm_count = int64_t(m.value(k::kSmCount));
  MapReader eff = m.map(k::kEfficiency);
  d.gemm = read_gemm(eff.map(k::kGemm));
  if (eff.has(k::kGemmFp8.name)) {
    d.has_gemm_fp8 = true;
    d.gemm_fp8 = read_gemm(eff.map(k::kGemmFp8));
  }
  d.memory_efficiency = eff.value(k::kMemoryEfficiency);
  d.kernel_min_s = eff.value(k::kKernelMinTime);
  eff.finish();
  m.finish();
  return d;
}

// A wafer-scale system: the wafer, its weight store (MemoryX) and its broadcast/reduce tree (SwarmX).
static void read_wafer_system(MapReader& root, HardwareSpec& hw)
{
  MapReader w = root.map(k::kWafer);
  auto& wf = hw.wafer;
  wf.name = w.string(k::kWaferName).value_or("");
  wf.cores = int64_t(w.value(k::kCores));
  wf.sram_bytes = w.value(k::kSram);
  wf.sram_bw_Bps = w.value(k::kSramBandwidth);
  wf.fabric_bw_Bps = w.value(k::kFabricBandwidth);
  wf.peak_flops = read_peaks(w);
  MapReader gemm = w.map(k::kCoreGemm);
  wf.gemm_max_efficiency = gemm.value(k::kCoreGemmMaxEfficiency);
  wf.gemm_half_length = gemm.value(k::kCoreGemmHalfLength);
  gemm.finish();
  wf.power_W = w.value(k::kWaferPower);
  MapReader mesh = w.map(k::kMesh);
  wf.mesh_rows = int(mesh.value(k::kMeshRows));
  wf.mesh_cols = int(mesh.value(k::kMeshCols));
  wf.hop_latency_s = mesh.value(k::kHopLatency);
  mesh.finish();
  MapReader io = w.map(k::kIo);
  wf.io_bw_Bps = io.value(k::kIoBandwidth);
  wf.io_latency_s = io.value(k::kIoLatency);
  io.finish();
  w.finish();
  MapReader mx = root.map(k::kMemoryX);
  hw.memoryx.capacity_bytes = mx.value(k::kMemoryXCapacity);
  hw.memoryx.bandwidth_Bps = mx.value(k::kMemoryXBandwidth);
  hw.memoryx.update_bandwidth_Bps = mx.value(k::kMemoryXUpdateBandwidth);
  mx.finish();
  MapReader sx = root.map(k::kSwarmX);
  hw.swarmx.port_bw_Bps = sx.value(k::kSwarmXPortBandwidth);
  hw.swarmx.fan_out = int(sx.value(k::kSwarmXFanOut));
  hw.swarmx.latency_per_level_s = sx.value(k::kSwarmXLatencyPerLevel);
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
  hw.name = root.string(k::kName).value_or("");
  root.accept({k::kDescription.name});
  if (auto st = root.string(k::kDefaultStack))
    hw.default_stack = file.resolve(*st);
  hw.kind = root.choice(k::kKind).value_or("");
  if (hw.kind.empty()) {  // the sections to read depend on it: the missing or unknown kind is the one error
    for (const auto& groups : {k::gpu_cluster_groups(), k::cerebras_wafer_groups()})
      for (const auto& g : groups)
        root.accept({g.path.substr(0, g.path.find('.'))});
    root.finish();
    return hw;
  }
  hw.wafer_scale = hw.kind == kCerebrasWafer;
  if (hw.wafer_scale) {
    read_wafer_system(root, hw);
    return hw;
  }
  hw.device = read_device(root.map(k::kDevice));

  MapReader node = root.map(k::kNode);
  const auto node_devices = node.integer(k::kNodeDevices);
  hw.node.devices = static_cast<int>(node_devices.value_or(1));
  hw.node.nvlink = read_link(node.map(k::kNvlink));
  hw.node.nvswitch_generation = static_cast<int>(node.value(k::kNvSwitchGeneration));
  node.finish();

  MapReader net = root.map(k::kNetwork);
  const auto nics = net.integer(k::kNicsPerNode);
  hw.network.nics_per_node = static_cast<int>(nics.value_or(1));
  hw.network.nic = read_link(net.map(k::kNic));
  MapReader topo = net.map(k::kTopology);
  auto type = topo.choice(k::kTopologyType);
  hw.network.topology = type && *type == "rail-optimized" ? Topology::RailOptimized : Topology::FatTree;
  hw.network.levels = static_cast<int>(topo.value(k::kLevels));
  hw.network.switch_radix = static_cast<int>(topo.value(k::kSwitchRadix));
  hw.network.oversubscription = topo.value(k::kOversubscription);
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
