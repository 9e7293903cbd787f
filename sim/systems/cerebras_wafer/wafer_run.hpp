#pragma once
/// What the wafer wing keeps of a run beyond the common report: the execution mode simulated, how it was chosen, and
/// where the model lives (on-wafer SRAM, MemoryX).
#include <string>

#include "report/run_report.hpp"
#include "scenario/scenario_spec.hpp"
#include "systems/cerebras_wafer/wafer_program.hpp"

namespace dtsim::systems {

struct WaferRun : report::SystemDetail {
  scenario::WaferMode mode = scenario::WaferMode::WeightStreaming;
  std::string mode_reason;
  wafer::WaferMemory memory;
};

/// The wafer part of a report made by the wafer wing. Throws std::logic_error for a report of another kind.
const WaferRun& wafer_run(const report::RunReport& r);

/// How the wafer wing's report prints its own parts.
const report::SystemSections& cerebras_wafer_sections();

}  // namespace dtsim::systems
