#pragma once
/// The result of `dtsim run` while it is made: the scenario, the replay and the kind's own part. Its record
/// (run_record.hpp) is made from it once, and every writer reads the record.
#include <memory>
#include <string>
#include <vector>

#include "parallel/memory.hpp"
#include "replay/replay.hpp"
#include "replay/step_program.hpp"
#include "report/system_sections.hpp"
#include "scenario/scenario_spec.hpp"

namespace dtsim::report {

/// What a kind of system keeps of a run beyond the common report (a wafer's execution mode and on-wafer memory);
/// only that kind's code reads it.
struct SystemDetail {
  virtual ~SystemDetail() = default;
};

struct RunReport {
  const scenario::ScenarioSpec* scenario = nullptr;
  /// How this kind of system prints its own parts (set by the kind that checked or simulated it).
  const SystemSections* sections = nullptr;
  parallel::MemoryReport memory;
  double total_params = 0;
  bool simulated = false;  ///< false when the plan does not fit (nothing was simulated)
  replay::ReplayResult replay;
  /// Kept alive with the report: trace events point at its step labels.
  std::shared_ptr<const replay::StepProgram> program;
  double model_flops = 0, hardware_flops = 0;  ///< per step, all devices
  double wall_s = 0;                           ///< simulator's own wall time
  std::shared_ptr<SystemDetail> detail;  ///< the kind's own part, where it has one
  std::string why_not_fitting;  ///< when it does not fit
  bool fits() const { return why_not_fitting.empty(); }
};

/// Step metrics derived from a report (zeros when nothing was simulated).
struct Derived {
  double step = 0, samples_per_s = 0, tokens_per_s = 0, model_tflops = 0, hw_tflops = 0, mfu = 0, hfu = 0;
  double power_W = 0, energy_J = 0;
};
Derived derive(const RunReport& r);

/// The 5th, 50th and 95th percentiles of a run's sampled steps (variability.samples > 1), linear between order
/// statistics (Hyndman and Fan's definition 7, numpy's default).
struct StepSpread {
  bool known = false;  ///< false for one sample
  double p5 = 0, p50 = 0, p95 = 0;
};
StepSpread step_spread(const RunReport& r);

}  // namespace dtsim::report
