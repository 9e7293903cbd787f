#include "report/time_to_train.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "parallel/precision.hpp"

namespace dtsim::report {

TimeToTrain time_to_train(const scenario::ScenarioSpec& s, double step_s, double params, const FailureAssumptions& f)
{
  const auto& r = s.resilience;
  TimeToTrain t;
  t.basis = f.basis;
  t.tokens = s.training.tokens;
  const double tokens_per_step = double(s.training.global_batch) * double(s.training.seq_len);
  t.steps = int64_t(std::ceil(t.tokens / tokens_per_step));
  t.compute_s = double(t.steps) * step_s;

  // Failures: every device and host fails independently at a constant rate, and any failure stops the job.
  const double device_mtbf = r.device_mtbf_s > 0 ? r.device_mtbf_s : f.device_mtbf_s;
  const double host_mtbf = r.host_mtbf_s > 0 ? r.host_mtbf_s : f.host_mtbf_s;
  const double rate = double(s.devices) / device_mtbf + (f.hosts > 0 && host_mtbf > 0 ? double(f.hosts) / host_mtbf : 0);
  t.mtbf_s = 1 / rate;

  // A checkpoint holds the weights and the optimizer's states as the optimizer holds them (training.optimizer_state:
  // an fp32 main copy or its remainders, Adam's two moments in fp32 or bf16), written by every host at once:
  // Megatron-LM's distributed checkpoint saves the model's sharded state dict and, per parameter, the optimizer's
  // main parameter and its states (megatron/core/optimizer/distrib_optimizer.py, DistributedOptimizer.
  // sharded_param_state_fs_model_space: "fp32_param" beside exp_avg and exp_avg_sq); torch.distributed.checkpoint
  // saves the model's and the optimizer's state dicts the same way.
  t.checkpoint_bytes = params * parallel::training_precision(s).model_and_optimizer_bytes_per_param();
  const double bandwidth = (r.checkpoint_bandwidth > 0 ? r.checkpoint_bandwidth : f.checkpoint_bandwidth_per_host) *
                           double(std::max<int64_t>(f.hosts, 1));
  t.checkpoint_write_s = t.checkpoint_bytes / bandwidth;
  t.checkpoint_async = r.checkpoint_async;
  t.restart_s = r.restart_s > 0 ? r.restart_s : f.restart_s;

  // Young-Daly: the interval that balances the time spent writing against the work lost, at least one write (an
  // asynchronous checkpoint cannot start before the previous one is written) and at least one step.
  if (r.checkpoint_interval_s > 0) {
    t.checkpoint_interval_s = r.checkpoint_interval_s;
    t.checkpoint_interval_basis = "scenario";
  } else {
    t.checkpoint_interval_s = std::sqrt(2 * t.checkpoint_write_s * t.mtbf_s);
    t.checkpoint_interval_basis = "Young-Daly";
  }
  t.checkpoint_interval_s = std::max({t.checkpoint_interval_s, t.checkpoint_write_s, step_s});

  // Wall time T: the work W, plus a synchronous write per interval of work, plus per failure (T / MTBF of them) the
  // restart and the work lost since the last complete checkpoint (half an interval; an asynchronous checkpoint is
  // complete a write after it starts).
  const double stall_per_interval = t.checkpoint_async ? 0 : t.checkpoint_write_s;
  const double lost_per_failure = t.checkpoint_interval_s / 2 + (t.checkpoint_async ? t.checkpoint_write_s : 0);
  const double busy = t.compute_s * (1 + stall_per_interval / t.checkpoint_interval_s);
  const double lost_share = (t.restart_s + lost_per_failure) / t.mtbf_s;
  if (lost_share >= 1) {
    char why[256];
    std::snprintf(why, sizeof why,
                  "the run never finishes: the job fails every %.3g h on average, less than what each failure costs: "
                  "a restart (%.3g h) and the work since the last checkpoint, redone (%.3g h)",
                  t.mtbf_s / 3600, t.restart_s / 3600, lost_per_failure / 3600);
    t.why_not = why;
    return t;
  }
  t.wall_s = busy / (1 - lost_share);
  t.expected_failures = t.wall_s / t.mtbf_s;
  t.checkpoint_stall_s = busy - t.compute_s;
  t.restarts_s = t.expected_failures * t.restart_s;
  t.lost_work_s = t.expected_failures * lost_per_failure;
  t.goodput = t.compute_s / t.wall_s;
  return t;
}

}  // namespace dtsim::report
