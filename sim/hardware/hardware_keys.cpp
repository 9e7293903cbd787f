#include "hardware/hardware_keys.hpp"

#include "collectives/algorithm_registry.hpp"
#include "hardware/hardware_spec.hpp"

namespace dtsim::hardware::keys {

using config::Dimension;
using config::Presence;
namespace limits = config::limits;
constexpr Presence kRequired = Presence::Required;
constexpr Presence kOptional = Presence::Optional;

const Key kName = Key::string("name", kRequired, "", "shown in reports");
const Key kKind = Key::choice("kind", {kGpuCluster, kCerebrasWafer}, kRequired, "",
                              "the kind of system: which sections follow and which wing simulates it "
                              "(docs/architecture.md, \"Systems as wings\")");
const Key kDescription = Key::string("description", kOptional, "", "free text, not read");
const Key kDefaultStack = Key::string("default_stack", kOptional, "no stack",
                                      "the software stack of scenarios that name none (hardware/stacks/*.yaml, "
                                      "relative to this file)");

// --- GPU cluster ---
const Key kDevice = Key::section("device", kRequired, "one GPU");
const Key kDeviceName = Key::string("name", kRequired, "", "the GPU's name");
const Key kPeakFlops = Key::section("peak_flops", kRequired, "dense peak per precision, at least one");
const Key kMemory = Key::quantity("memory", Dimension::Bytes, limits::kCapacity, kRequired, "", "device memory");
const Key kMemoryBandwidth = Key::quantity("memory_bandwidth", Dimension::Bandwidth, limits::kBandwidth, kRequired,
                                           "", "peak memory bandwidth");
const Key kPower = Key::quantity("power", Dimension::Power, limits::kPower, kOptional, "not given (no energy)",
                                 "board power (TDP)");
const Key kSmCount = Key::integer("sm_count", limits::kSmCount, kOptional, "not given",
                                  "streaming multiprocessors; needed by `parallel.tp_overlap`; communication kernels "
                                  "take 16 of them (NCCL) or 20 (an expert all-to-all) from the compute beside them");
const Key kEfficiency = Key::section("efficiency", kRequired, "what the device achieves of its peaks");
const Key kGemm = Key::section("gemm", kRequired, "GEMM efficiency against shape (docs/calibration.md)");
const Key kGemmFp8 = Key::section("gemm_fp8", kOptional,
                                  "the same for fp8 GEMMs at the fp8 peak; absent: fp8 GEMMs use `gemm`");
const Key kGemmMax = Key::number("max", 0.01, 1.0, kRequired, "", "the fraction of peak large GEMMs approach")
                         .defaults_to(1.0);
const Key kGemmHalfArea = Key::number("half_area", 0, 1e12, kRequired, "",
                                      "output elements at which the fill factor is 1/2");
const Key kGemmAreaExponent = Key::number("area_exponent", 0.1, 10, kOptional, "",
                                          "how sharply the fill factor saturates").defaults_to(1);
const Key kGemmHalfK = Key::number("half_k", 0, 1e6, kRequired, "",
                                   "reduction depth at which the depth factor is 1/2");
const Key kMemoryEfficiency = Key::number("memory", 0.01, 1.0, kRequired, "",
                                          "achieved fraction of memory bandwidth for streaming kernels")
                                  .defaults_to(1.0);
const Key kKernelMinTime = Key::quantity("kernel_min_time", Dimension::Time, limits::kLatency, kRequired, "",
                                         "shortest time any kernel takes (launch and tail)");
const Key kNode = Key::section("node", kRequired, "a host and its NVLink domain");
const Key kNodeDevices = Key::integer("devices", limits::kNodeDevices, kRequired, "", "devices per node")
                             .defaults_to(1);
const Key kNvlink = Key::section("nvlink", kRequired, "each device's link to the node switch (NVSwitch)");
const Key kNvSwitchGeneration = Key::integer("nvswitch_generation", limits::kNvSwitchGeneration, kOptional,
                                             "0: not known",
                                             "3 and later reduce in the switch (NVLink SHARP): NCCL's `nvls` and "
                                             "`nvls_tree` algorithms; 2: A100, 3: H100, 4: B200");
const Key kLinkBandwidth = Key::quantity("bandwidth", Dimension::Bandwidth, limits::kBandwidth, kRequired, "",
                                         "datasheet bandwidth, per direction");
const Key kLinkLatency = Key::quantity("latency", Dimension::Time, limits::kLatency, kRequired, "",
                                       "one-way latency: between two devices (NVLink), end to end across the "
                                       "fabric (NIC)");
const Key kLinkGoodput = Key::quantity("goodput", Dimension::Bandwidth, limits::kBandwidth, kOptional,
                                       "the bandwidth",
                                       "the data rate copies achieve on the link (a measured or sourced fact, "
                                       "docs/calibration.md \"Collectives\"): the rate the platform's links run at");
const Key kNetwork = Key::section("network", kRequired, "the NICs and the switch fabric between nodes");
const Key kNicsPerNode = Key::integer("nics_per_node", limits::kNodeDevices, kRequired, "",
                                      "compute NICs per node, a divisor of node.devices; device i uses NIC i % n")
                             .defaults_to(1);
const Key kNic = Key::section("nic", kRequired, "one NIC, per direction");
const Key kTopology = Key::section("topology", kRequired, "the switch fabric");
const Key kTopologyType = Key::choice("type", {"fat-tree", "rail-optimized"}, kRequired, "",
                                      "leaf switches group NICs by node order, or by rail");
const Key kLevels = Key::integer("levels", limits::kTopologyLevels, kRequired, "", "switch levels (1: one switch)")
                        .defaults_to(1);
const Key kSwitchRadix = Key::integer("switch_radix", limits::kSwitchRadix, kRequired, "",
                                      "ports per switch (half down, half up)").defaults_to(2);
const Key kOversubscription = Key::number("oversubscription", 1.0, 64.0, kOptional, "",
                                          "down/up bandwidth ratio at every switch level").defaults_to(1.0);
const Key kCollectives = Key::section("collectives", kOptional, "NCCL's choices forced (hardware or stack file)");
const Key kCollectiveAlgorithm =
    Key::choice("algorithm", collectives::algorithm_choices(), kOptional, "NCCL's choice",
                "force NCCL's collective algorithm (the stack's wins); auto: NCCL's choice, the lowest predicted time "
                "for the message size and group shape. Where the forced algorithm cannot run a collective (tree or "
                "NVLS for a reduce-scatter, NVLS without NVSwitch 3) the ring runs, as with NCCL's per-function "
                "NCCL_ALGO lists");
const Key kCollectiveProtocol = Key::choice("protocol", collectives::protocol_choices(), kOptional, "NCCL's choice",
                                            "force NCCL's protocol likewise (NVLS algorithms run Simple only)");

// --- Cerebras wafer-scale system ---
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

const std::vector<Key>& peak_flops_keys()
{
  static const std::vector<Key> keys = [] {
    std::vector<Key> v;
    for (const char* p : {"fp32", "tf32", "fp16", "bf16", "fp8"})
      v.push_back(Key::quantity(p, Dimension::FlopRate, limits::kFlopRate, kOptional, "not offered",
                                std::string("dense peak at ") + p));
    return v;
  }();
  return keys;
}

namespace {

std::vector<const Key*> peaks()
{
  std::vector<const Key*> v;
  for (const Key& k : peak_flops_keys())
    v.push_back(&k);
  return v;
}

}  // namespace

std::vector<config::KeyGroup> root_groups() { return {{"", {&kName, &kKind, &kDescription, &kDefaultStack}}}; }

std::vector<config::KeyGroup> gpu_cluster_groups()
{
  const std::vector<const Key*> link = {&kLinkBandwidth, &kLinkLatency, &kLinkGoodput};
  const std::vector<const Key*> gemm = {&kGemmMax, &kGemmHalfArea, &kGemmAreaExponent, &kGemmHalfK};
  return {{"device", {&kDeviceName, &kMemory, &kMemoryBandwidth, &kPower, &kSmCount}},
          {"device.peak_flops", peaks()},
          {"device.efficiency", {&kMemoryEfficiency, &kKernelMinTime}},
          {"device.efficiency.gemm", gemm},
          {"device.efficiency.gemm_fp8", gemm},
          {"node", {&kNodeDevices, &kNvSwitchGeneration}},
          {"node.nvlink", link},
          {"network", {&kNicsPerNode}},
          {"network.nic", link},
          {"network.topology", {&kTopologyType, &kLevels, &kSwitchRadix, &kOversubscription}},
          {"collectives", {&kCollectiveAlgorithm, &kCollectiveProtocol}}};
}

std::vector<config::KeyGroup> cerebras_wafer_groups()
{
  return {{"wafer", {&kWaferName, &kCores, &kSram, &kSramBandwidth, &kFabricBandwidth, &kWaferPower}},
          {"wafer.peak_flops", peaks()},
          {"wafer.core_gemm", {&kCoreGemmMaxEfficiency, &kCoreGemmHalfLength}},
          {"wafer.mesh", {&kMeshRows, &kMeshCols, &kHopLatency}},
          {"wafer.io", {&kIoBandwidth, &kIoLatency}},
          {"memoryx", {&kMemoryXCapacity, &kMemoryXBandwidth, &kMemoryXUpdateBandwidth}},
          {"swarmx", {&kSwarmXPortBandwidth, &kSwarmXFanOut, &kSwarmXLatencyPerLevel}}};
}

}  // namespace dtsim::hardware::keys
