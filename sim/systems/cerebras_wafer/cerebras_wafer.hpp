#pragma once
/// The Cerebras wafer-scale wing: CS-2/CS-3 systems, weight streaming from MemoryX through SwarmX or the model
/// resident on the wafer (hardware `kind: cerebras-wafer`).
#include "systems/system_kind.hpp"

namespace dtsim::systems {

const SystemKind& cerebras_wafer();

}  // namespace dtsim::systems
