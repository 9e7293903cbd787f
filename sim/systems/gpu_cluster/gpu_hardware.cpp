#include "systems/gpu_cluster/gpu_hardware.hpp"

#include "config/units.hpp"
#include "hardware/hardware_keys.hpp"
#include "hardware/hardware_yaml.hpp"

namespace dtsim::systems {

using config::MapReader;
using hardware::CollectiveForce;
using hardware::DeviceSpec;
using hardware::GemmEfficiency;
using hardware::HardwareSpec;
using hardware::LinkSpec;
using hardware::Topology;

namespace {

using namespace config::declaring;

// The keys, declared once.
const Key kDevice = Key::section("device", kRequired, "one GPU");
const Key kDeviceName = Key::string("name", kRequired, "", "the GPU's name");
const Key kMemory = Key::quantity("memory", Dimension::Bytes, limits::kCapacity, kRequired, "", "device memory");
const Key kMemoryBandwidth = Key::quantity("memory_bandwidth", Dimension::Bandwidth, limits::kBandwidth, kRequired,
                                           "", "peak memory bandwidth");
const Key kPower = Key::quantity("power", Dimension::Power, limits::kPower, kOptional, "not given (no energy)",
                                 "board power (TDP)");
const Key kSmCount = Key::integer("sm_count", limits::kSmCount, kOptional, "not given",
                                  "streaming multiprocessors; needed by `parallel.tp_overlap`; communication kernels "
                                  "take 16 of them (NCCL) or 20 (an expert all-to-all) from the compute beside them");
const Key kFp8NonTnGemm =
    Key::boolean("fp8_non_tn_gemm", kOptional, "false (TN only, as Hopper and Ada)",
                 "the tensor cores take fp8 operands in every layout (compute capability 10.x and 13 on, Transformer "
                 "Engine's nvte_is_non_tn_fp8_gemm_supported): its fp8 casts write no transposed copy for the "
                 "weight-gradient and input-gradient GEMMs");
// The runtime names what reports call the memory it takes beside the model (stack keys memory.cuda_context and
// memory.nccl_buffers): CUDA's context and NCCL's buffers, or on AMD GPUs HIP's and RCCL's (ROCm's ports of both).
const Key kRuntime = Key::choice("runtime", {"cuda", "rocm"}, kOptional, "",
                                 "the vendor's GPU runtime and collective library: cuda (CUDA, NCCL) or rocm (HIP, "
                                 "RCCL; AMD Instinct); reports name the memory they take after it")
                         .defaults_to("cuda");
const Key kEfficiency = Key::section("efficiency", kRequired, "what the device achieves of its peaks");
const Key kGemm = Key::section("gemm", kRequired, "GEMM efficiency against shape (docs/calibration.md)");
const Key kGemmFp8 = Key::section("gemm_fp8", kOptional,
                                  "the same for fp8 GEMMs at the fp8 peak; training.precision fp8 needs it");
const Key kGemmMxfp8 = Key::section("gemm_mxfp8", kOptional,
                                    "the same for MXFP8 GEMMs at the mxfp8 peak; training.precision mxfp8 needs it");
const Key kGemmNvfp4 = Key::section("gemm_nvfp4", kOptional,
                                    "the same for NVFP4 GEMMs at the nvfp4 peak; training.precision nvfp4 needs it");
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
const Key kAttention = Key::section("attention", kOptional,
                                   "fused attention kernels' published BF16 throughput on this device, one section "
                                   "per kernel that runs here (docs/calibration.md, \"Fused attention kernels\"); "
                                   "absent: a scenario that fuses attention is an input error naming the missing key");
const Key kFlashAttention2 = Key::section("flash_attention_2", kOptional,
                                          "FlashAttention-2: the kernel of every fused attention unless the stack "
                                          "names another that runs here; required by fused attention");
const Key kFlashAttention3 = Key::section("flash_attention_3", kOptional,
                                          "FlashAttention-3 (sm90 kernels: Hopper only); absent: a stack naming it "
                                          "runs FlashAttention-2");
const Key kCudnnAttention = Key::section("cudnn", kOptional,
                                         "cuDNN's fused attention (Transformer Engine's default on Hopper); absent: a "
                                         "stack naming it runs FlashAttention-2");
// Each row: TFLOP/s as the benchmark counts them (causal: half the score matrix) at sequence 512, 1k, 2k, 4k, 8k, 16k.
const std::string kRowDoc = "TFLOP/s at sequence 512, 1k, 2k, 4k, 8k and 16k (six numbers)";
const Key kForwardD64 = Key::number_list("forward_d64", 0.1, 1e5, kRequired, "", "forward, head dim 64: " + kRowDoc);
const Key kForwardD128 = Key::number_list("forward_d128", 0.1, 1e5, kRequired, "",
                                          "forward, head dim 128: " + kRowDoc);
const Key kForwardD128Causal = Key::number_list("forward_d128_causal", 0.1, 1e5, kRequired, "",
                                                "forward, head dim 128, causal (its FLOPs halved): " + kRowDoc +
                                                    "; its ratio to forward_d128 is the causal factor of every row");
const Key kBackwardD64 = Key::number_list("backward_d64", 0.1, 1e5, kRequired, "",
                                          "backward, head dim 64: " + kRowDoc);
const Key kBackwardD128 = Key::number_list("backward_d128", 0.1, 1e5, kRequired, "",
                                           "backward, head dim 128: " + kRowDoc);
const Key kNode = Key::section("node", kRequired, "a host: its devices (its NICs are in `network`)");
const Key kNodeDevices = Key::integer("devices", limits::kNodeDevices, kRequired, "", "devices per node (host)")
                             .defaults_to(1);
const Key kNvlink = Key::section("nvlink", kOptional,
                                 "each device's link to the NVSwitch of its scale-up domain; required in `node` "
                                 "without a `scale_up` section, in `scale_up` with one");
const Key kNvSwitchGeneration = Key::integer("nvswitch_generation", limits::kNvSwitchGeneration, kOptional,
                                             "0: not known",
                                             "3 and later reduce in the switch (NVLink SHARP): NCCL's `nvls` and "
                                             "`nvls_tree` algorithms; 2: A100, 3: H100, 4: B200 and NVL72 racks");
const Key kNvls = Key::boolean("nvls", kOptional, "true where nvswitch_generation is 3 or later",
                               "whether NCCL may reduce in the switches (NVLS; false: as NCCL_NVLS_ENABLE=0)");
const Key kScaleUpTopology = Key::choice("topology", {"switch", "full-mesh"}, kOptional, "switch",
                                         "switch: each device's `nvlink` goes to the domain's NVSwitch; full-mesh: no "
                                         "switch, one `nvlink` from each device to each other of the domain (AMD "
                                         "MI300X and MI355X xGMI: 7 links per GPU in a node of 8)");
const Key kScaleUp = Key::section("scale_up", kOptional,
                                  "the scale-up (NVLink) domain when it spans several nodes, as in a GB200 NVL72 "
                                  "rack; absent: each node is its own domain and `node` holds its NVLink");
const Key kScaleUpNodes = Key::integer("nodes", limits::kDomainNodes, kRequired, "",
                                       "nodes (hosts) in one domain: its devices are node.devices times this");
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
const Key kRouting = Key::choice("routing", {"adaptive", "static-ecmp"}, kOptional, "",
                                 "how switches spread flows over equal-cost uplinks: by port load (InfiniBand "
                                 "adaptive routing, Spectrum-X) or by a static hash of each flow (ECMP), whose "
                                 "collisions load some uplinks more than others (docs/calibration.md, "
                                 "\"Fabric: switch tiers and routing\")")
                         .defaults_to(std::string("adaptive"));
// Port to port latency of one switch: NVIDIA does not publish it in the reference material; third-party pages
// quote 130-400 ns for Quantum-2 NDR (e.g. yobitel.com/knowledge-base/nvidia-quantum-2, "~330 ns").
const Key kSwitchLatency = Key::quantity("switch_latency", Dimension::Time, limits::kLatency, kOptional, "",
                                         "port to port latency of one switch: each network step of a collective "
                                         "pays it once per switch its group's route crosses beyond the first "
                                         "(leaf 1, spine 3, core 5)")
                               .defaults_to(300e-9);
const Key kQpsPerConnection = Key::integer("qps_per_connection", limits::kQpsPerConnection, kOptional, "",
                                           "NCCL_IB_QPS_PER_CONNECTION (NCCL's default 1): flows a ring "
                                           "connection is split into, each hashed on its own under static ECMP")
                                  .defaults_to(1);
const Key kHashSeed = Key::integer("hash_seed", limits::kSeed, kOptional, "",
                                   "static ECMP: the seed of the switches' flow hash").defaults_to(1);
LinkSpec read_link(MapReader m)
{
  LinkSpec l;
  l.bw_Bps = m.value(kLinkBandwidth);
  l.latency_s = m.value(kLinkLatency);
  l.goodput_Bps = m.quantity(kLinkGoodput).value_or(l.bw_Bps);
  m.finish();
  return l;
}

GemmEfficiency read_gemm(MapReader m)
{
  GemmEfficiency g;
  g.max = m.value(kGemmMax);
  g.half_area = m.value(kGemmHalfArea);
  g.area_exponent = m.value(kGemmAreaExponent);
  g.half_k = m.value(kGemmHalfK);
  m.finish();
  return g;
}

hardware::AttentionTable read_attention_table(MapReader m)
{
  hardware::AttentionTable t;
  for (auto [key, row] : {std::pair<const Key*, hardware::AttentionTable::Row*>{&kForwardD64, &t.forward_d64},
                          {&kForwardD128, &t.forward_d128},
                          {&kForwardD128Causal, &t.forward_d128_causal},
                          {&kBackwardD64, &t.backward_d64},
                          {&kBackwardD128, &t.backward_d128}}) {
    auto v = m.number_list(*key);
    if (!v)
      continue;
    if (v->size() != row->size()) {
      m.error(key->name, "expected " + std::to_string(row->size()) + " numbers (sequence 512 to 16k), got " +
                             std::to_string(v->size()));
      continue;
    }
    for (size_t i = 0; i < row->size(); ++i)
      (*row)[i] = (*v)[i] * 1e12;  // TFLOP/s
  }
  m.finish();
  return t;
}

std::map<std::string, hardware::AttentionTable> read_attention(MapReader m)
{
  std::map<std::string, hardware::AttentionTable> kernels;
  for (const Key* k : {&kFlashAttention2, &kFlashAttention3, &kCudnnAttention})
    if (m.has(k->name))
      kernels[k->name] = read_attention_table(m.map(*k));
  m.finish();
  return kernels;
}

DeviceSpec read_device(MapReader m)
{
  DeviceSpec d;
  d.name = m.string(kDeviceName).value_or("");
  d.peak_flops = hardware::read_peak_flops(m);
  d.memory_bytes = m.value(kMemory);
  d.memory_bw_Bps = m.value(kMemoryBandwidth);
  d.power_W = m.value(kPower);
  d.sm_count = int64_t(m.value(kSmCount));
  d.fp8_non_tn_gemm = m.boolean(kFp8NonTnGemm).value_or(false);
  d.runtime = m.choice(kRuntime).value_or(kRuntime.default_choice);
  MapReader eff = m.map(kEfficiency);
  d.gemm = read_gemm(eff.map(kGemm));
  if (eff.has(kGemmFp8.name)) {
    d.has_gemm_fp8 = true;
    d.gemm_fp8 = read_gemm(eff.map(kGemmFp8));
  }
  for (const Key* k : {&kGemmMxfp8, &kGemmNvfp4})
    if (eff.has(k->name))
      d.gemm_block_scaled[k->name.substr(5)] = read_gemm(eff.map(*k));  // "gemm_mxfp8" -> "mxfp8"
  if (eff.has(kAttention.name))
    d.attention = read_attention(eff.map(kAttention));
  d.memory_efficiency = eff.value(kMemoryEfficiency);
  d.kernel_min_s = eff.value(kKernelMinTime);
  eff.finish();
  m.finish();
  return d;
}

}  // namespace

namespace {

// The NVLink of a domain, from the section that describes it: `node` (a domain of one node) or `scale_up`.
void read_domain_links(MapReader& m, hardware::ScaleUpSpec& d)
{
  d.nvlink = read_link(m.map(kNvlink.name, true));
  d.nvswitch_generation = static_cast<int>(m.value(kNvSwitchGeneration));
  d.nvls = m.boolean(kNvls).value_or(d.nvswitch_generation >= 3);
  if (d.nvls && d.nvswitch_generation < 3 && m.has(kNvls.name))
    m.error(kNvls.name, "expected false with nvswitch_generation " + std::to_string(d.nvswitch_generation) +
                            " (NVLink SHARP needs NVSwitch generation 3 or later), got true");
  d.full_mesh = m.choice(kScaleUpTopology).value_or("switch") == "full-mesh";
  if (d.full_mesh && m.has(kNvSwitchGeneration.name) && d.nvswitch_generation != 0)
    m.error(kNvSwitchGeneration.name, "expected 0 or no such key with topology full-mesh (a mesh has no switch), got " +
                                          std::to_string(d.nvswitch_generation));
  if (d.full_mesh && d.nvls && m.has(kNvls.name))
    m.error(kNvls.name, "expected false with topology full-mesh (no switch to reduce in), got true");
  if (d.full_mesh)
    d.nvls = false;
}

}  // namespace

void read_gpu_hardware(MapReader& root, HardwareSpec& hw)
{
  hw.device = read_device(root.map(kDevice));

  MapReader node = root.map(kNode);
  const auto node_devices = node.integer(kNodeDevices);
  hw.node.devices = static_cast<int>(node_devices.value_or(1));
  const bool scale_up = root.has(kScaleUp.name);
  if (!scale_up) {
    read_domain_links(node, hw.scale_up);
  } else {
    // The domain's NVLink is described once: in scale_up.
    for (const Key* k : {&kNvlink, &kNvSwitchGeneration, &kNvls, &kScaleUpTopology})
      if (node.has(k->name))
        node.error(k->name, "expected no such key in node when scale_up describes the domain's NVLink, got one");
    node.accept({kNvlink.name, kNvSwitchGeneration.name, kNvls.name, kScaleUpTopology.name});
  }
  node.finish();
  if (scale_up) {
    hw.scale_up.from_section = true;
    MapReader domain = root.map(kScaleUp);
    const auto hosts = domain.integer(kScaleUpNodes);
    hw.scale_up.nodes = static_cast<int>(hosts.value_or(1));
    read_domain_links(domain, hw.scale_up);
    // xGMI joins the GPUs of one host: a mesh spanning hosts is not a product, and its links would need cables.
    if (hw.scale_up.full_mesh && hosts && *hosts != 1)
      domain.error(kScaleUpNodes.name, "expected 1 with topology full-mesh (a mesh joins the devices of one node), "
                                       "got " + std::to_string(*hosts));
    if (hosts && node_devices && *hosts * *node_devices > limits::kNodeDevices.hi)
      domain.error(kScaleUpNodes.name, "expected at most " + std::to_string(limits::kNodeDevices.hi) +
                                           " devices in a domain (node.devices " + std::to_string(*node_devices) +
                                           " times the nodes), got " + std::to_string(*hosts * *node_devices));
    domain.finish();
  }

  MapReader net = root.map(kNetwork);
  const auto nics = net.integer(kNicsPerNode);
  hw.network.nics_per_node = static_cast<int>(nics.value_or(1));
  hw.network.nic = read_link(net.map(kNic));
  MapReader topo = net.map(kTopology);
  auto type = topo.choice(kTopologyType);
  hw.network.topology = type && *type == "rail-optimized" ? Topology::RailOptimized : Topology::FatTree;
  hw.network.levels = static_cast<int>(topo.value(kLevels));
  hw.network.switch_radix = static_cast<int>(topo.value(kSwitchRadix));
  hw.network.oversubscription = topo.value(kOversubscription);
  const auto routing = topo.choice(kRouting);
  hw.network.routing = routing && *routing == "static-ecmp" ? hardware::Routing::StaticEcmp
                                                             : hardware::Routing::Adaptive;
  hw.network.switch_latency_s = topo.value(kSwitchLatency);
  hw.network.qps_per_connection = static_cast<int>(topo.value(kQpsPerConnection));
  hw.network.hash_seed = static_cast<int64_t>(topo.value(kHashSeed));
  topo.finish();
  net.finish();
  hw.collectives = hardware::read_collective_force(root);
  root.finish();

  // Compared only when both were read: a default must not cause a follow-on error.
  if (node_devices && nics && *nics > *node_devices)
    root.diag().add(net.where(kNicsPerNode.name), "network.nics_per_node",
                    "expected at most node.devices (" + std::to_string(hw.node.devices) + ") NICs, got " +
                        std::to_string(hw.network.nics_per_node));
  else if (node_devices && nics && *node_devices % *nics != 0)
    root.diag().add(net.where(kNicsPerNode.name), "network.nics_per_node",
                    "expected a divisor of node.devices (" + std::to_string(hw.node.devices) + "), got " +
                        std::to_string(hw.network.nics_per_node));
}

void check_gpu_hardware(HardwareSpec& hw, const HardwareSpec& file, Diagnostics& diag)
{
  // A what-if on a link's bandwidth (--set / --vary) that leaves its goodput alone keeps the measured ratio of
  // the two: a faster link of the same kind loses the same share to its protocol.
  auto follow = [](LinkSpec& l, const LinkSpec& f) {
    if (l.bw_Bps != f.bw_Bps && l.goodput_Bps == f.goodput_Bps && f.bw_Bps > 0)
      l.goodput_Bps = f.goodput_Bps * l.bw_Bps / f.bw_Bps;
  };
  follow(hw.scale_up.nvlink, file.scale_up.nvlink);
  follow(hw.network.nic, file.network.nic);
  const char* nvlink_goodput = hw.scale_up.from_section ? "scale_up.nvlink.goodput" : "node.nvlink.goodput";
  for (auto [l, key] : {std::pair<const LinkSpec*, const char*>{&hw.scale_up.nvlink, nvlink_goodput},
                        {&hw.network.nic, "network.nic.goodput"}})
    if (l->goodput_Bps > l->bw_Bps && l->bw_Bps > 0)
      diag.add({hw.file, 0, 0}, key,
               "expected at most the link's bandwidth (" +
                   config::format_quantity(l->bw_Bps, config::Dimension::Bandwidth) + "), got " +
                   config::format_quantity(l->goodput_Bps, config::Dimension::Bandwidth));
}

namespace {

using Json = nlohmann::ordered_json;

Json link_record(const LinkSpec& l)
{
  return {{"bandwidth", l.bw_Bps}, {"latency", l.latency_s}, {"goodput", l.goodput_Bps}};
}

Json gemm_record(const GemmEfficiency& g)
{
  return {{"max", g.max}, {"half_area", g.half_area}, {"area_exponent", g.area_exponent}, {"half_k", g.half_k}};
}

// The rows as the file gives them, in TFLOP/s.
Json attention_record(const hardware::AttentionTable& t)
{
  auto tflops = [](const hardware::AttentionTable::Row& row) {
    Json v = Json::array();
    for (double x : row)
      v.push_back(x / 1e12);
    return v;
  };
  return {{"forward_d64", tflops(t.forward_d64)},
          {"forward_d128", tflops(t.forward_d128)},
          {"forward_d128_causal", tflops(t.forward_d128_causal)},
          {"backward_d64", tflops(t.backward_d64)},
          {"backward_d128", tflops(t.backward_d128)}};
}

// The domain's keys, in `node` or in `scale_up` (whichever describes it).
void domain_record(const hardware::ScaleUpSpec& d, Json& section)
{
  section["nvlink"] = link_record(d.nvlink);
  section["nvswitch_generation"] = d.nvswitch_generation;
  section["nvls"] = d.nvls;
  section["topology"] = d.full_mesh ? "full-mesh" : "switch";
}

}  // namespace

Json gpu_hardware_record(const HardwareSpec& hw)
{
  const DeviceSpec& d = hw.device;
  Json device;
  device["name"] = d.name;
  Json peaks;
  for (const auto& k : hardware::keys::peak_flops_keys())  // null: not offered
    peaks[k.name] = d.peak_flops.count(k.name) ? Json(d.peak_flops.at(k.name)) : Json(nullptr);
  device["peak_flops"] = peaks;
  device["memory"] = d.memory_bytes;
  device["memory_bandwidth"] = d.memory_bw_Bps;
  device["power"] = d.power_W;
  device["sm_count"] = d.sm_count;
  device["fp8_non_tn_gemm"] = d.fp8_non_tn_gemm;
  device["runtime"] = d.runtime;
  Json eff;
  eff["memory"] = d.memory_efficiency;
  eff["kernel_min_time"] = d.kernel_min_s;
  eff["gemm"] = gemm_record(d.gemm);
  eff["gemm_fp8"] = d.has_gemm_fp8 ? gemm_record(d.gemm_fp8) : Json(nullptr);  // null: no fp8 training
  for (const Key* k : {&kGemmMxfp8, &kGemmNvfp4}) {
    const auto it = d.gemm_block_scaled.find(k->name.substr(5));  // "gemm_mxfp8" -> "mxfp8"
    eff[k->name] = it != d.gemm_block_scaled.end() ? gemm_record(it->second) : Json(nullptr);
  }
  Json attention;
  for (const Key* k : {&kFlashAttention2, &kFlashAttention3, &kCudnnAttention}) {
    const auto it = d.attention.find(k->name);
    attention[k->name] = it != d.attention.end() ? attention_record(it->second) : Json(nullptr);
  }
  eff["attention"] = attention;
  device["efficiency"] = eff;

  Json r;
  r["device"] = device;
  Json node = {{"devices", hw.node.devices}};
  if (!hw.scale_up.from_section)
    domain_record(hw.scale_up, node);
  r["node"] = node;
  if (hw.scale_up.from_section) {
    Json scale_up = {{"nodes", hw.scale_up.nodes}};
    domain_record(hw.scale_up, scale_up);
    r["scale_up"] = scale_up;
  }
  const hardware::NetworkSpec& n = hw.network;
  r["network"] = {{"nics_per_node", n.nics_per_node},
                  {"nic", link_record(n.nic)},
                  {"topology",
                   {{"type", n.topology == Topology::RailOptimized ? "rail-optimized" : "fat-tree"},
                    {"levels", n.levels},
                    {"switch_radix", n.switch_radix},
                    {"oversubscription", n.oversubscription},
                    {"routing", n.routing == hardware::Routing::StaticEcmp ? "static-ecmp" : "adaptive"},
                    {"switch_latency", n.switch_latency_s},
                    {"qps_per_connection", n.qps_per_connection},
                    {"hash_seed", n.hash_seed}}}};
  r["collectives"] = {{"algorithm", hw.collectives.algorithm.empty() ? "auto" : hw.collectives.algorithm},
                      {"protocol", hw.collectives.protocol.empty() ? "auto" : hw.collectives.protocol}};
  return r;
}

std::vector<config::KeyGroup> gpu_hardware_key_groups()
{
  const std::vector<const Key*> link = {&kLinkBandwidth, &kLinkLatency, &kLinkGoodput};
  const std::vector<const Key*> gemm = {&kGemmMax, &kGemmHalfArea, &kGemmAreaExponent, &kGemmHalfK};
  const std::vector<const Key*> attention_rows = {&kForwardD64, &kForwardD128, &kForwardD128Causal, &kBackwardD64,
                                                  &kBackwardD128};
  namespace hk = hardware::keys;
  return {{"device", {&kDeviceName, &kMemory, &kMemoryBandwidth, &kPower, &kSmCount, &kFp8NonTnGemm, &kRuntime}},
          {"device.peak_flops", hk::peak_flops_key_list()},
          {"device.efficiency", {&kMemoryEfficiency, &kKernelMinTime}},
          {"device.efficiency.gemm", gemm},
          {"device.efficiency.gemm_fp8", gemm},
          {"device.efficiency.gemm_mxfp8", gemm},
          {"device.efficiency.gemm_nvfp4", gemm},
          {"device.efficiency.attention", {&kFlashAttention2, &kFlashAttention3, &kCudnnAttention}},
          {"device.efficiency.attention.KERNEL", attention_rows},
          {"node", {&kNodeDevices, &kNvSwitchGeneration, &kNvls, &kScaleUpTopology}},
          {"node.nvlink", link},
          {"scale_up", {&kScaleUpNodes, &kNvSwitchGeneration, &kNvls, &kScaleUpTopology}},
          {"scale_up.nvlink", link},
          {"network", {&kNicsPerNode}},
          {"network.nic", link},
          {"network.topology", {&kTopologyType, &kLevels, &kSwitchRadix, &kOversubscription, &kRouting,
                                  &kSwitchLatency, &kQpsPerConnection, &kHashSeed}},
          {"collectives", {&hk::kCollectiveAlgorithm, &hk::kCollectiveProtocol}}};
}

}  // namespace dtsim::systems
