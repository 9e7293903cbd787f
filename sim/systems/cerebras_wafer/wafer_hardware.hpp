#pragma once
/// The Cerebras wing's part of a hardware file (`kind: cerebras-wafer`): the wafer, its weight store (MemoryX) and
/// its broadcast/reduce tree (SwarmX), in SI units; read by wafer_hardware.cpp through its keys' declarations.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/key.hpp"
#include "config/map_reader.hpp"
#include "hardware/hardware_spec.hpp"
#include "hardware/system_hardware.hpp"

namespace dtsim::systems {

/// A wafer-scale processor (Cerebras WSE class). The simulator sees it as a grid of tiles, each holding an equal
/// share of the cores, SRAM and compute; neighbouring tiles are joined by mesh links whose bandwidth is the tile
/// edge's share of the fabric bandwidth.
struct WaferSpec {
  std::string name;
  int64_t cores = 0;
  double sram_bytes = 0;
  double sram_bw_Bps = 0;
  double fabric_bw_Bps = 0;                  ///< aggregate over all cores and directions
  std::map<std::string, double> peak_flops;  ///< per precision, whole wafer
  /// GEMM utilisation on the core array (sim/wafer/core_gemm.hpp): the fraction of peak approached by GEMMs that
  /// give each core long reductions, and the reduction length per core at which a GEMM reaches half of it (fitted).
  double gemm_max_efficiency = 1.0;
  double gemm_half_length = 0;
  double kernel_switch_s = 0;                ///< weight streaming: per unit and direction, on top of its kernels
  int64_t calibration_runs = 0;              ///< published runs the GEMM model was fitted on
  std::vector<double> heldout_errors;        ///< simulated / measured - 1 on published runs the fit did not see
  int mesh_rows = 1, mesh_cols = 1;          ///< tiles of the simulation grid
  double hop_latency_s = 0;                  ///< per mesh hop
  double io_bw_Bps = 0;                      ///< off-wafer I/O, each direction
  double io_latency_s = 0;
  double power_W = 0;                        ///< per system
  int64_t tiles() const { return int64_t(mesh_rows) * mesh_cols; }
  /// One direction of a link between two neighbouring tiles: the cores along a tile edge times each core's
  /// share of the fabric bandwidth (four directions per core).
  double tile_link_bw_Bps() const;
};

/// External weight store that streams weights to the wafers and runs the optimizer (Cerebras MemoryX).
struct MemoryXSpec {
  double capacity_bytes = 0;
  double bandwidth_Bps = 0;         ///< towards the systems, each direction
  double update_bandwidth_Bps = 0;  ///< memory bandwidth of the optimizer update
};

/// Broadcast/reduce tree between MemoryX and the systems (Cerebras SwarmX).
struct SwarmXSpec {
  double port_bw_Bps = 0;  ///< each tree link, each direction
  int fan_out = 2;
  double latency_per_level_s = 0;
};

struct CerebrasWaferHardware : hardware::SystemHardware {
  WaferSpec wafer;
  MemoryXSpec memoryx;
  SwarmXSpec swarmx;
  double peak_flops(const std::string& precision) const override;
  double device_memory_bytes() const override { return wafer.sram_bytes; }
  double device_power_W() const override { return wafer.power_W; }
};

/// The wafer part of a hardware file of this wing's kind. Throws std::logic_error for another kind's.
const CerebrasWaferHardware& wafer_hardware(const hardware::HardwareSpec& hw);

/// Reads the wafer, memoryx and swarmx sections from the file's root into hw.system, and finishes the root.
void read_wafer_hardware(config::MapReader& root, hardware::HardwareSpec& hw);

/// The wafer, memoryx and swarmx sections by key path, as `dtsim hardware` prints them.
nlohmann::ordered_json wafer_hardware_record(const CerebrasWaferHardware& w);

/// The wing's hardware keys by mapping, for the reference.
std::vector<config::KeyGroup> wafer_hardware_key_groups();

}  // namespace dtsim::systems
