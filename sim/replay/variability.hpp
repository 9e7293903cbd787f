#pragma once
// Internal to sim/replay: the seeded draws of per-device speed differences and per-kernel jitter
// (scenario.variability; docs/variability.md). No SimGrid, no state: every draw is a hash of (seed, sample, device,
// unit, step), so the same input gives the same step byte for byte, whatever order the replay asks in.
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "parallel/placement.hpp"
#include "scenario/scenario_spec.hpp"

namespace dtsim::replay {

/// How much longer than its timed length a kernel of a simulated device takes, and how much of that the device's
/// own kernel takes (the rest: waiting for a slower member of its group, which a folded device stands for).
struct KernelFactor {
  double time = 1;  ///< the kernel's length over its timed length
  double own = 1;   ///< the device's own kernel over its timed length (at most `time`)
};

class Variability {
 public:
  /// Draws of step `sample` for the devices of `placement`. `full`: every device is simulated and draws its own;
  /// folded, the representative of a stage (dp 0, tp 0) stands for every device of the stage: its speed is the
  /// slowest of theirs (the same draws the full replay gives each of them), and each of its kernels the slowest of
  /// its tensor-parallel group's `tp` draws (their order statistic), which every TP collective waits for.
  Variability(const scenario::VariabilitySpec& spec, const parallel::Placement& placement, int64_t tp, bool full,
              int64_t sample);
  bool on() const { return on_; }
  /// The factor of device `device`'s kernel `step` of schedule unit `unit`, a run of kernels whose relative spread
  /// is kernel_jitter times `weight` (Step::jitter_weight).
  KernelFactor kernel(int64_t device, int64_t unit, size_t step, double weight) const;
  /// The device factor alone (the optimizer's memory-bound kernels take no jitter draw).
  KernelFactor device(int64_t device) const;

  /// A standard normal quantile from its upper-tail probability q in (0, 1): z with P(Z > z) = q.
  static double normal_upper_quantile(double q);
  /// The multiplier exp(sigma z - sigma^2 / 2) of a log-normal of mean 1 and coefficient of variation `cv`.
  static double log_normal(double z, double cv);
  /// A uniform in (0, 1) from a hash of the given words.
  static double uniform(std::initializer_list<uint64_t> words);

 private:
  scenario::VariabilitySpec spec_;
  bool on_ = false, full_ = false;
  int64_t tp_ = 1;
  uint64_t sample_ = 0;
  int64_t per_stage_ = 1;
  std::vector<double> own_;     ///< per device: its own speed factor
  std::vector<double> factor_;  ///< per device: the factor it runs at (full: its own; folded: its stage's slowest)
};

}  // namespace dtsim::replay
