#pragma once
/// Every key of a hardware file (hardware/*.yaml), declared once (config/key.hpp): hardware_yaml.cpp reads through
/// these declarations, and docs/yaml-reference.md's hardware tables are generated from them.
#include <vector>

#include "config/key.hpp"

namespace dtsim::hardware::keys {

using config::Key;

// The file's root, every kind.
extern const Key kName, kKind, kDescription, kDefaultStack;

// A GPU cluster (kind: gpu-cluster).
extern const Key kDevice, kDeviceName, kPeakFlops, kMemory, kMemoryBandwidth, kPower, kSmCount;
extern const Key kEfficiency, kGemm, kGemmFp8, kGemmMax, kGemmHalfArea, kGemmAreaExponent, kGemmHalfK;
extern const Key kMemoryEfficiency, kKernelMinTime;
extern const Key kNode, kNodeDevices, kNvlink, kNvSwitchGeneration;
extern const Key kLinkBandwidth, kLinkLatency, kLinkGoodput;
extern const Key kNetwork, kNicsPerNode, kNic, kTopology, kTopologyType, kLevels, kSwitchRadix, kOversubscription;
extern const Key kCollectives, kCollectiveAlgorithm, kCollectiveProtocol;

// A Cerebras wafer-scale system (kind: cerebras-wafer).
extern const Key kWafer, kWaferName, kCores, kSram, kSramBandwidth, kFabricBandwidth, kWaferPower;
extern const Key kCoreGemm, kCoreGemmMaxEfficiency, kCoreGemmHalfLength;
extern const Key kMesh, kMeshRows, kMeshCols, kHopLatency, kIo, kIoBandwidth, kIoLatency;
extern const Key kMemoryX, kMemoryXCapacity, kMemoryXBandwidth, kMemoryXUpdateBandwidth;
extern const Key kSwarmX, kSwarmXPortBandwidth, kSwarmXFanOut, kSwarmXLatencyPerLevel;

/// The precisions a `peak_flops` mapping may list, each a compute rate.
const std::vector<Key>& peak_flops_keys();

/// The keys of every kind's file, grouped by mapping, for the reference (docs/yaml-reference.md).
std::vector<config::KeyGroup> root_groups();
std::vector<config::KeyGroup> gpu_cluster_groups();
std::vector<config::KeyGroup> cerebras_wafer_groups();

}  // namespace dtsim::hardware::keys
