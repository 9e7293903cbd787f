#pragma once
/// Hardware description in SI units (seconds, bytes, bytes/s, FLOP/s, watts), as parsed and
/// checked from hardware/*.yaml. Runtime code reads only these structs, never YAML.
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "hardware/system_hardware.hpp"

namespace dtsim::hardware {

/// Achieved fraction of peak for a (batched) GEMM of shape (m x k) * (k x n), batch count b:
///   efficiency = max * A^p / (A^p + half_area^p) * k / (k + half_k),   A = b * m * n  (output elements)
/// The first factor is how well the output tiles fill the device (small outputs leave SMs idle, wave
/// quantization), the second the cost of a shallow reduction dimension. The GEMM is also never faster than its
/// memory traffic allows (roofline), see compute_model.cpp.
struct GemmEfficiency {
  double max = 1.0;
  double half_area = 0;      ///< output elements at which the fill factor is 1/2
  double area_exponent = 1;  ///< p: how sharply the fill factor saturates
  double half_k = 0;         ///< reduction depth at which the depth factor is 1/2
};

/// Published throughput of one fused attention kernel on the device (BF16), in FLOP/s as the benchmark counts them
/// (causal: half of the full score matrix), at sequences of 512, 1k, 2k, 4k, 8k and 16k queries and keys
/// (device.efficiency.attention.KERNEL). Causal rows are published for the forward at head dimension 128 only.
struct AttentionTable {
  using Row = std::array<double, 6>;
  Row forward_d64{}, forward_d128{}, forward_d128_causal{}, backward_d64{}, backward_d128{};
};

struct DeviceSpec {
  std::string name;
  std::map<std::string, double> peak_flops;  ///< per precision ("bf16", "fp16", "fp32", ...), FLOP/s
  double memory_bytes = 0;                   ///< device memory capacity
  double memory_bw_Bps = 0;                  ///< peak memory bandwidth
  GemmEfficiency gemm;                       ///< shape-dependent GEMM efficiency
  /// The same for fp8 GEMMs at the fp8 peak (device.efficiency.gemm_fp8), fitted to fp8 measurements; without it
  /// the device refuses training.precision fp8.
  GemmEfficiency gemm_fp8;
  bool has_gemm_fp8 = false;
  /// The same for block-scaled GEMMs at their peaks, by precision ("mxfp8": device.efficiency.gemm_mxfp8, "nvfp4":
  /// gemm_nvfp4), fitted to measurements of those GEMMs; a precision without its curve is refused.
  std::map<std::string, GemmEfficiency> gemm_block_scaled;
  /// Fused attention kernels' published throughput, by the kernel's key: flash_attention_2, flash_attention_3,
  /// cudnn. A kernel without figures does not run on the device (docs/calibration.md, "Fused attention kernels").
  std::map<std::string, AttentionTable> attention;
  double memory_efficiency = 1.0;            ///< achieved fraction of memory bandwidth for streaming kernels
  double kernel_min_s = 0;                   ///< shortest time any kernel takes (launch and tail)
  double power_W = 0;                        ///< board power (TDP)
  /// Streaming multiprocessors: communication kernels that run beside a GEMM take some of them
  /// (parallel.tp_overlap). 0: not given.
  int64_t sm_count = 0;
  /// The tensor cores take fp8 operands in every layout, not only TN (device.fp8_non_tn_gemm: Blackwell's
  /// compute capability 10.x): Transformer Engine's fp8 casts then write no transposed copy.
  bool fp8_non_tn_gemm = false;
  /// The GPU runtime and its collective library (device.runtime): "cuda" (CUDA, NCCL) or "rocm" (HIP, RCCL).
  /// Reports name the memory they take after it; the simulation is the same.
  std::string runtime = "cuda";
};

/// One direction of a link: datasheet bandwidth per direction, one-way latency, and its goodput: the data rate that
/// copies achieve on it, a measured or sourced fact of the link (NVLink's per-link rate in NCCL's topology model,
/// a NIC's measured rate), not a correction. The platform's links run at the goodput; what each collective
/// protocol achieves of it is the collective model's (collectives/algorithm_registry.hpp).
struct LinkSpec {
  double bw_Bps = 0;
  double latency_s = 0;
  double goodput_Bps = 0;
};

/// A collective algorithm and protocol a hardware or stack file forces (collectives: {algorithm, protocol});
/// empty or "auto": NCCL's choice by predicted time.
struct CollectiveForce {
  std::string algorithm, protocol;
};

/// A host: its devices (and, in NetworkSpec, its NICs).
struct NodeSpec {
  int devices = 0;  ///< devices per node (host, compute tray)
};

/// The scale-up (NVLink) domain: the devices that reach each other through NVSwitches, without a NIC. A DGX or HGX
/// host is one domain (no `scale_up` section: its NVLink is `node.nvlink`); a GB200 NVL72 rack is one domain of
/// 18 hosts of 4 GPUs. Devices in different domains talk through their hosts' NICs.
struct ScaleUpSpec {
  bool from_section = false;  ///< read from a `scale_up` section (else from `node`: a domain of one node)
  int nodes = 1;              ///< hosts per domain (scale_up.nodes; 1 without a scale_up section)
  LinkSpec nvlink;  ///< each device's link to the domain's switches (NVSwitch), per direction
  /// NVSwitch generation (0: not given). 3 and later reduce in the switch (NVLink SHARP, NCCL's NVLS algorithms);
  /// 2 is the A100's, 3 the H100's, 4 the B200's and the NVL72 racks'.
  int nvswitch_generation = 0;
  /// Whether NCCL may reduce in the switches (NVLS): scale_up.nvls, by default where the generation has NVLink
  /// SHARP (3 and later).
  bool nvls = false;
  /// No switch: every device has one link to each other device of its domain (AMD MI300X's xGMI, `topology:
  /// full-mesh`), and `nvlink` is one such per-pair link. Else `nvlink` is each device's link to the switch.
  bool full_mesh = false;
  /// Per direction, what one device can send at once to `peers` other devices of its domain: its one switch link,
  /// or on a full mesh one link per peer.
  double device_Bps(int64_t peers) const
  {
    return full_mesh ? nvlink.goodput_Bps * double(peers > 1 ? peers : 1) : nvlink.goodput_Bps;
  }
};

enum class Topology { FatTree, RailOptimized };

/// How the switches spread flows over their equal-cost uplinks: adaptively, by the load of each port (InfiniBand's
/// adaptive routing, Spectrum-X), so that the fabric acts as one fluid pool per tier; or by a static hash of each
/// flow's header (ECMP), so that some uplinks carry more flows than others (parallel/fabric_routes.hpp).
enum class Routing { Adaptive, StaticEcmp };

struct NetworkSpec {
  int nics_per_node = 0;  ///< compute NICs per node; device i uses NIC i % nics_per_node
  LinkSpec nic;           ///< per NIC, per direction; latency is end to end across the fabric
  Topology topology = Topology::FatTree;
  int levels = 1;               ///< switch levels of the fat tree (1 = one big switch)
  int switch_radix = 0;         ///< ports per switch
  double oversubscription = 1;  ///< down/up bandwidth ratio at every switch level
  Routing routing = Routing::Adaptive;
  double switch_latency_s = 0;  ///< port to port, per switch a route crosses beyond the first
  int qps_per_connection = 1;   ///< NCCL_IB_QPS_PER_CONNECTION: flows per ring connection, each hashed alone
  int64_t hash_seed = 1;        ///< static ECMP: the seed of the switches' hash
};

/// A hardware file as read: its name, its kind of system and what that kind's wing read of it. A GPU cluster's
/// sections are the fields below (device, node, network, collectives); every other kind keeps its own in `system`
/// (the Cerebras wafer's: sim/systems/cerebras_wafer/wafer_hardware.hpp).
struct HardwareSpec {
  std::string file;
  /// Every key path the file writes ("network.nic.bandwidth", and "network" and "network.nic"), --set values not
  /// included: what `dtsim hardware` marks as given rather than "(default)" (config::YamlFile::key_paths).
  std::set<std::string> written_keys;
  std::string name;
  std::string kind;  ///< the file's `kind`: the name its wing is registered under (sim/systems/system_kinds.cpp)
  /// The software stack a scenario on this hardware uses unless it names its own (hardware/stacks/*.yaml, resolved
  /// against the hardware file's folder); empty: none.
  std::string default_stack;
  // A GPU cluster's sections.
  DeviceSpec device;
  NodeSpec node;
  ScaleUpSpec scale_up;
  NetworkSpec network;
  CollectiveForce collectives;  ///< collectives: {algorithm, protocol}
  /// The sections of a kind other than a GPU cluster, as its wing read them.
  std::shared_ptr<const SystemHardware> system;
  /// Peak FLOP/s of one device (a GPU, or a whole wafer) at a precision; 0 when the precision is unknown.
  double peak_flops(const std::string& precision) const;
  /// Devices of one scale-up (NVLink) domain: the host's devices times the hosts in a domain.
  int64_t domain_devices() const { return int64_t(node.devices) * scale_up.nodes; }
  /// Compute NICs of one domain: every host's.
  int64_t domain_nics() const { return int64_t(network.nics_per_node) * scale_up.nodes; }
  double device_memory_bytes() const { return system ? system->device_memory_bytes() : device.memory_bytes; }
  double device_power_W() const { return system ? system->device_power_W() : device.power_W; }
};

}  // namespace dtsim::hardware
