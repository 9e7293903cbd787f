#pragma once
/// Time to train: the wall time of a whole training run of `training.tokens` tokens, with the failures, checkpoint
/// writes and restarts a run of that size meets. Periodic checkpointing under exponentially distributed failures,
/// with Daly's exact expectation of the wall time (J. T. Daly 2006, "A higher order estimate of the optimum
/// checkpoint interval for restart dumps", FGCS 22(3)): the job fails at a constant rate (every device and host
/// independently); a failure loses the interval of work under way (and, with asynchronous checkpoints, the write
/// in flight) and costs a restart, which a failure can interrupt too; each synchronous checkpoint stops training
/// for its write. The interval is Young-Daly's sqrt(2 x write x MTBF) unless the scenario gives one.
#include <string>

#include "scenario/scenario_spec.hpp"

namespace dtsim::report {

/// A kind of system's failure and checkpoint assumptions, each with where it comes from (the wings fill them:
/// sim/systems/*/report_sections.cpp); a scenario's `resilience` section overrides them.
struct FailureAssumptions {
  double device_mtbf_s = 0;    ///< mean time between failures of one device (GPU, wafer system)
  double host_mtbf_s = 0;      ///< of one host, for what fails outside the devices (0: no hosts)
  int64_t hosts = 0;           ///< hosts of the job
  double checkpoint_bandwidth_per_host = 0;  ///< storage write bandwidth of one host (or system), bytes/s
  double restart_s = 0;        ///< from a failure to training again: detection, rescheduling, reloading
  std::string basis;           ///< where the figures come from, in one sentence
};

struct TimeToTrain {
  double tokens = 0;
  int64_t steps = 0;
  double compute_s = 0;              ///< steps x step time: the run without a failure or a checkpoint
  double mtbf_s = 0;                 ///< of the whole job
  double checkpoint_bytes = 0;  ///< weights and optimizer states (Precision::model_and_optimizer_bytes_per_param)
  double checkpoint_write_s = 0;
  bool checkpoint_async = false;
  double checkpoint_interval_s = 0;
  std::string checkpoint_interval_basis;  ///< "Young-Daly" or "scenario"
  double restart_s = 0;
  /// Expected totals over the run: time in checkpoint writes that stop training, in restarts, and in work lost.
  double checkpoint_stall_s = 0, restarts_s = 0, lost_work_s = 0;
  double expected_failures = 0;
  double wall_s = 0;     ///< time to train; 0 when the run makes no progress (see why_not)
  double goodput = 0;    ///< compute_s / wall_s
  std::string why_not;   ///< why the run never finishes: its expected wall time exceeds what a double holds
  std::string basis;     ///< the failure assumptions' basis
};

/// The time to train of `s` (training.tokens > 0) at a simulated step of `step_s`, with `params` parameters.
TimeToTrain time_to_train(const scenario::ScenarioSpec& s, double step_s, double params, const FailureAssumptions& f);

}  // namespace dtsim::report
