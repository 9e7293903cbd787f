#pragma once
/// The GPU-cluster wing: GPUs in nodes on a switched fabric, under hybrid data, tensor, pipeline, context and expert
/// parallelism (hardware `kind: gpu-cluster`).
#include "systems/system_kind.hpp"

namespace dtsim::systems {

const SystemKind& gpu_cluster();

/// How the GPU-cluster wing's report prints its own parts (also for jobs on a shared fabric).
const report::SystemSections& gpu_cluster_sections();

}  // namespace dtsim::systems
