#pragma once
/// Hardware description of a GPU cluster in SI units (seconds, bytes, bytes/s, FLOP/s, watts), as parsed and
/// checked from hardware/*.yaml. Runtime code reads only these structs, never YAML.
#include <map>
#include <string>

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

struct DeviceSpec {
  std::string name;
  std::map<std::string, double> peak_flops;  ///< per precision ("bf16", "fp16", "fp32", ...), FLOP/s
  double memory_bytes = 0;                   ///< device memory capacity
  double memory_bw_Bps = 0;                  ///< peak memory bandwidth
  GemmEfficiency gemm;                       ///< shape-dependent GEMM efficiency
  double memory_efficiency = 1.0;            ///< achieved fraction of memory bandwidth for streaming kernels
  double kernel_min_s = 0;                   ///< shortest time any kernel takes (launch and tail)
  double power_W = 0;                        ///< board power (TDP)
};

/// One direction of a link: bandwidth per direction, one-way latency, and the fraction of the bandwidth that
/// collective libraries achieve on it (from measured bus bandwidth).
struct LinkSpec {
  double bw_Bps = 0;
  double latency_s = 0;
  double efficiency = 1.0;
  double effective_bw_Bps() const { return bw_Bps * efficiency; }
};

struct NodeSpec {
  int devices = 0;  ///< devices per node
  LinkSpec nvlink;  ///< each device's link to the node switch (NVSwitch), per direction
};

enum class Topology { FatTree, RailOptimized };

struct NetworkSpec {
  int nics_per_node = 0;  ///< compute NICs per node; device i uses NIC i % nics_per_node
  LinkSpec nic;           ///< per NIC, per direction; latency is end to end across the fabric
  Topology topology = Topology::FatTree;
  int levels = 1;               ///< switch levels of the fat tree (1 = one big switch)
  int switch_radix = 0;         ///< ports per switch
  double oversubscription = 1;  ///< down/up bandwidth ratio at every switch level
};

struct HardwareSpec {
  std::string file;
  std::string name;
  DeviceSpec device;
  NodeSpec node;
  NetworkSpec network;
};

}  // namespace dtsim::hardware
