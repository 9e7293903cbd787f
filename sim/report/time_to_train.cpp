#include "report/time_to_train.hpp"

#include <algorithm>
#include <cmath>

#include "config/units.hpp"
#include "core/format_number.hpp"
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
  const double rate =
      double(s.devices) / device_mtbf + (f.hosts > 0 && host_mtbf > 0 ? double(f.hosts) / host_mtbf : 0);
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

  // Wall time: the work W in segments of one interval tau of work each (Daly 2006: W / tau of them). Failures come
  // at rate 1/M (exponential: memoryless); a failure loses the segment under way and costs a restart R, and a
  // failure during the restart starts the restart again. A segment that needs x of failure-free time completes
  // after E = E[min(X, x)] + P(X < x) E' in expectation, E' being the retry's R + x of failure-free time,
  // M (e^{(R + x)/M} - 1); that is E = (1 - e^{-x/M}) M e^{(R + x)/M} = M e^{R/M} (e^{x/M} - 1), Daly's exact
  // expectation (J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart dumps", Future
  // Generation Computer Systems 22(3):303-312, 2006, its complete model's expected wall time). Synchronous
  // checkpoints: x = tau + write. Asynchronous ones stall nothing (x = tau) but a segment is safe only once its
  // checkpoint is written, a write later: a failure then also loses the write's time, and a retry needs
  // R + tau + write of failure-free time, which gives E = M e^{(R + write)/M} (e^{tau/M} - 1).
  const double tau = t.checkpoint_interval_s, write = t.checkpoint_write_s, M = t.mtbf_s;
  const double segment_s = t.checkpoint_async ? tau : tau + write;
  const double retry_extra_s = t.restart_s + (t.checkpoint_async ? write : 0);
  const double segments = t.compute_s / tau;
  t.wall_s = segments * M * std::exp(retry_extra_s / M) * std::expm1(segment_s / M);
  if (!std::isfinite(t.wall_s)) {
    // The expectation is finite for every finite input but can exceed what a double holds: a segment then makes
    // progress once in more than 10^300 tries.
    using config::Dimension;
    using config::format_quantity;
    t.why_not = "the run never finishes: the job fails every " + format_quantity(M, Dimension::Time) +
                " on average, and a restart (" + format_quantity(t.restart_s, Dimension::Time) +
                ") with an interval of work and its write (" + format_quantity(segment_s, Dimension::Time) +
                ") must pass without a failure to make progress: one chance in 10^" +
                format_number("%.0f", (retry_extra_s + segment_s) / M / std::log(10.0));
    t.wall_s = 0;
    return t;
  }
  // Failures are a Poisson process over the wall time: wall / M of them in expectation (Wald's identity). Each
  // is followed by one restart attempt of min(R, time to the next failure), M (1 - e^{-R/M}) on average; the
  // rest beyond the work and the completed writes is work lost and redone.
  t.expected_failures = t.wall_s / M;
  t.checkpoint_stall_s = t.checkpoint_async ? 0 : segments * write;
  t.restarts_s = t.expected_failures * M * -std::expm1(-t.restart_s / M);
  t.lost_work_s = t.wall_s - t.compute_s - t.checkpoint_stall_s - t.restarts_s;
  t.goodput = t.compute_s / t.wall_s;
  return t;
}

}  // namespace dtsim::report
