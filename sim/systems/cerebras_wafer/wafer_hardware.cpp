#include "systems/cerebras_wafer/wafer_hardware.hpp"

#include <cmath>
#include <stdexcept>

#include "hardware/hardware_keys.hpp"
#include "hardware/hardware_yaml.hpp"
#include "stack/stack_keys.hpp"

namespace dtsim::systems {

namespace {

using namespace config::declaring;
using config::MapReader;

// The keys, declared once.
const Key kWafer = Key::section("wafer", kRequired, "the wafer-scale processor");
const Key kWaferName = Key::string("name", kRequired, "", "the wafer's name");
const Key kCores = Key::integer("cores", limits::kWaferCores, kRequired, "", "cores on the wafer").defaults_to(1);
const Key kSram = Key::quantity("sram", Dimension::Bytes, limits::kCapacity, kRequired, "", "on-chip memory");
const Key kSramBandwidth = Key::quantity("sram_bandwidth", Dimension::Bandwidth, limits::kBandwidth, kRequired, "",
                                         "on-chip memory bandwidth");
const Key kFabricBandwidth = Key::quantity("fabric_bandwidth", Dimension::Bandwidth, limits::kBandwidth, kRequired,
                                           "", "aggregate on-wafer fabric (split over cores and four directions)");
const Key kWaferPower = Key::quantity("power", Dimension::Power, limits::kPower, kRequired, "", "per system");
const Key kCoreGemm = Key::section("core_gemm", kRequired, "GEMM utilisation on the core array (docs/wafer.md)");
const Key kCoreGemmMaxEfficiency =
    Key::number("max_efficiency", 0.001, 1.0, kRequired, "",
                "fraction of peak a GEMM approaches when each core gets long reductions (fitted)").defaults_to(1.0);
// A core's 48 KB of SRAM holds 24,576 16-bit values (Lie, Hot Chips 34): the bound leaves a wide margin.
const Key kCoreGemmHalfLength = Key::number("half_length", 0.0, 1e6, kRequired, "",
                                            "reduction elements per core at which a GEMM reaches half of "
                                            "`max_efficiency` (fitted; 0: shape-independent)");
// A fixed time per kernel under weight streaming: the wafer is mapped to one layer's kernel at a time, forward
// then backward (Cerebras docs, execution modes), and the smallest model measured shows a floor (docs/wafer.md).
const Key kKernelSwitch =
    Key::quantity("kernel_switch", Dimension::Time, limits::kLatency, kOptional, "",
                  "fixed time each unit's forward and each unit's backward takes on top of its kernels under weight "
                  "streaming (the wafer mapped to the next layer's kernel)")
        .defaults_to(0.0);
// The spread of the wafer model's errors on published runs it was not fitted on (scripts/calibrate_wafer.py). Its
// keys are a software stack's calibration keys (stack/stack_keys.hpp), declared there once.
const Key kCalibration = Key::section("calibration", kOptional, "how the wafer model meets published runs");
using stack::keys::kCalibrationRuns;
using stack::keys::kHeldoutErrors;
const Key kMesh = Key::section("mesh", kRequired, "the simulated tile grid");
const Key kMeshRows = Key::integer("rows", limits::kMeshSide, kRequired, "", "tile rows").defaults_to(1);
const Key kMeshCols = Key::integer("cols", limits::kMeshSide, kRequired, "", "tile columns").defaults_to(1);
const Key kHopLatency = Key::quantity("hop_latency", Dimension::Time, limits::kLatency, kRequired, "",
                                      "per mesh hop");
const Key kIo = Key::section("io", kRequired, "off-wafer I/O");
const Key kIoBandwidth = Key::quantity("bandwidth", Dimension::Bandwidth, limits::kBandwidth, kRequired, "",
                                       "each direction");
const Key kIoLatency = Key::quantity("latency", Dimension::Time, limits::kLatency, kRequired, "", "one way");
const Key kMemoryX = Key::section("memoryx", kRequired, "the external weight store that runs the optimizer");
const Key kMemoryXCapacity = Key::quantity("capacity", Dimension::Bytes, limits::kCapacity, kRequired, "",
                                           "weights, gradients and optimizer states it holds");
const Key kMemoryXBandwidth = Key::quantity("bandwidth", Dimension::Bandwidth, limits::kBandwidth, kRequired, "",
                                            "towards the systems, each direction");
const Key kMemoryXUpdateBandwidth = Key::quantity("update_bandwidth", Dimension::Bandwidth, limits::kBandwidth,
                                                  kRequired, "", "memory bandwidth of its optimizer update");
const Key kSwarmX = Key::section("swarmx", kRequired, "the broadcast/reduce tree between MemoryX and the systems");
const Key kSwarmXPortBandwidth = Key::quantity("port_bandwidth", Dimension::Bandwidth, limits::kBandwidth, kRequired,
                                               "", "each tree link, each direction");
const Key kSwarmXFanOut = Key::integer("fan_out", limits::kFanOut, kRequired, "", "children per tree node")
                              .defaults_to(2);
const Key kSwarmXLatencyPerLevel = Key::quantity("latency_per_level", Dimension::Time, limits::kLatency, kRequired,
                                                 "", "per level of the tree");

}  // namespace

double WaferSpec::tile_link_bw_Bps() const
{
  if (cores <= 0 || tiles() <= 0)
    return 0;
  const double per_port = fabric_bw_Bps / (double(cores) * 4.0);
  const double cores_per_tile = double(cores) / double(tiles());
  return per_port * std::sqrt(cores_per_tile);  // a square tile has sqrt(cores) cores along each edge
}

double CerebrasWaferHardware::peak_flops(const std::string& precision) const
{
  auto it = wafer.peak_flops.find(precision);
  return it == wafer.peak_flops.end() ? 0.0 : it->second;
}

const CerebrasWaferHardware& wafer_hardware(const hardware::HardwareSpec& hw)
{
  if (const auto* w = dynamic_cast<const CerebrasWaferHardware*>(hw.system.get()))
    return *w;
  throw std::logic_error("the hardware of " + hw.file + " is not a Cerebras wafer-scale system");
}

void read_wafer_hardware(MapReader& root, hardware::HardwareSpec& hw)
{
  auto section = std::make_shared<CerebrasWaferHardware>();
  MapReader w = root.map(kWafer);
  auto& wf = section->wafer;
  wf.name = w.string(kWaferName).value_or("");
  wf.cores = int64_t(w.value(kCores));
  wf.sram_bytes = w.value(kSram);
  wf.sram_bw_Bps = w.value(kSramBandwidth);
  wf.fabric_bw_Bps = w.value(kFabricBandwidth);
  wf.peak_flops = hardware::read_peak_flops(w);
  MapReader gemm = w.map(kCoreGemm);
  wf.gemm_max_efficiency = gemm.value(kCoreGemmMaxEfficiency);
  wf.gemm_half_length = gemm.value(kCoreGemmHalfLength);
  gemm.finish();
  wf.kernel_switch_s = w.value(kKernelSwitch);
  MapReader cal = w.map(kCalibration);
  wf.calibration_runs = int64_t(cal.value(kCalibrationRuns));
  wf.heldout_errors = cal.number_list(kHeldoutErrors).value_or(std::vector<double>{});
  cal.finish();
  wf.power_W = w.value(kWaferPower);
  MapReader mesh = w.map(kMesh);
  wf.mesh_rows = int(mesh.value(kMeshRows));
  wf.mesh_cols = int(mesh.value(kMeshCols));
  wf.hop_latency_s = mesh.value(kHopLatency);
  mesh.finish();
  MapReader io = w.map(kIo);
  wf.io_bw_Bps = io.value(kIoBandwidth);
  wf.io_latency_s = io.value(kIoLatency);
  io.finish();
  w.finish();
  MapReader mx = root.map(kMemoryX);
  section->memoryx.capacity_bytes = mx.value(kMemoryXCapacity);
  section->memoryx.bandwidth_Bps = mx.value(kMemoryXBandwidth);
  section->memoryx.update_bandwidth_Bps = mx.value(kMemoryXUpdateBandwidth);
  mx.finish();
  MapReader sx = root.map(kSwarmX);
  section->swarmx.port_bw_Bps = sx.value(kSwarmXPortBandwidth);
  section->swarmx.fan_out = int(sx.value(kSwarmXFanOut));
  section->swarmx.latency_per_level_s = sx.value(kSwarmXLatencyPerLevel);
  sx.finish();
  root.finish();
  hw.system = section;
}

nlohmann::ordered_json wafer_hardware_record(const CerebrasWaferHardware& w)
{
  using Json = nlohmann::ordered_json;
  const WaferSpec& wf = w.wafer;
  Json peaks;
  for (const auto& k : hardware::keys::peak_flops_keys())  // null: not offered
    peaks[k.name] = wf.peak_flops.count(k.name) ? Json(wf.peak_flops.at(k.name)) : Json(nullptr);
  Json wafer;
  wafer["name"] = wf.name;
  wafer["cores"] = wf.cores;
  wafer["sram"] = wf.sram_bytes;
  wafer["sram_bandwidth"] = wf.sram_bw_Bps;
  wafer["fabric_bandwidth"] = wf.fabric_bw_Bps;
  wafer["power"] = wf.power_W;
  wafer["kernel_switch"] = wf.kernel_switch_s;
  wafer["peak_flops"] = peaks;
  wafer["core_gemm"] = {{"max_efficiency", wf.gemm_max_efficiency}, {"half_length", wf.gemm_half_length}};
  wafer["calibration"] = {{"runs", wf.calibration_runs}, {"heldout_errors", wf.heldout_errors}};
  wafer["mesh"] = {{"rows", wf.mesh_rows}, {"cols", wf.mesh_cols}, {"hop_latency", wf.hop_latency_s}};
  wafer["io"] = {{"bandwidth", wf.io_bw_Bps}, {"latency", wf.io_latency_s}};
  Json r;
  r["wafer"] = wafer;
  r["memoryx"] = {{"capacity", w.memoryx.capacity_bytes},
                  {"bandwidth", w.memoryx.bandwidth_Bps},
                  {"update_bandwidth", w.memoryx.update_bandwidth_Bps}};
  r["swarmx"] = {{"port_bandwidth", w.swarmx.port_bw_Bps},
                 {"fan_out", w.swarmx.fan_out},
                 {"latency_per_level", w.swarmx.latency_per_level_s}};
  return r;
}

std::vector<config::KeyGroup> wafer_hardware_key_groups()
{
  return {{"wafer", {&kWaferName, &kCores, &kSram, &kSramBandwidth, &kFabricBandwidth, &kWaferPower, &kKernelSwitch}},
          {"wafer.peak_flops", hardware::keys::peak_flops_key_list()},
          {"wafer.core_gemm", {&kCoreGemmMaxEfficiency, &kCoreGemmHalfLength}},
          {"wafer.calibration", {&kCalibrationRuns, &kHeldoutErrors}},
          {"wafer.mesh", {&kMeshRows, &kMeshCols, &kHopLatency}},
          {"wafer.io", {&kIoBandwidth, &kIoLatency}},
          {"memoryx", {&kMemoryXCapacity, &kMemoryXBandwidth, &kMemoryXUpdateBandwidth}},
          {"swarmx", {&kSwarmXPortBandwidth, &kSwarmXFanOut, &kSwarmXLatencyPerLevel}}};
}

}  // namespace dtsim::systems
