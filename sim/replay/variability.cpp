#include "replay/variability.hpp"

#include <algorithm>
#include <cmath>

namespace dtsim::replay {

namespace {

// What each draw is of, so that two kinds of draw never share a hash.
constexpr uint64_t kDeviceDraw = 1, kKernelDraw = 2, kFoldedKernelDraw = 3, kFoldedOwnDraw = 4;

// SplitMix64's finalizer (Steele, Lea and Flood, OOPSLA 2014): a bijection of 64-bit words whose output bits each
// depend on every input bit; chained over the words of a key it gives independent-looking uniforms per key.
uint64_t mix(uint64_t x)
{
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double normal_from_uniform(double u) { return Variability::normal_upper_quantile(1 - u); }

}  // namespace

double Variability::uniform(std::initializer_list<uint64_t> words)
{
  uint64_t h = 0x5851f42d4c957f2dULL;
  for (uint64_t w : words)
    h = mix(h ^ w);
  return (double(h >> 11) + 0.5) * 0x1.0p-53;  // 53 bits, never 0 or 1
}

double Variability::normal_upper_quantile(double q)
{
  if (q > 0.5)
    return -normal_upper_quantile(1 - q);
  // Abramowitz and Stegun 26.2.23 (error below 4.5e-4), then Newton steps on the exact tail 0.5 erfc(z / sqrt 2):
  // each squares the error, two reach double precision for q down to 1e-300.
  const double t = std::sqrt(-2 * std::log(q));
  double z = t - (2.515517 + 0.802853 * t + 0.010328 * t * t) /
                     (1 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t);
  for (int i = 0; i < 3; ++i) {
    const double density = std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI);
    if (density <= 0)
      break;
    z += (0.5 * std::erfc(z / std::sqrt(2.0)) - q) / density;
  }
  return z;
}

double Variability::log_normal(double z, double cv)
{
  if (cv <= 0)
    return 1;
  const double sigma = std::sqrt(std::log1p(cv * cv));
  return std::exp(sigma * z - 0.5 * sigma * sigma);
}

Variability::Variability(const scenario::VariabilitySpec& spec, const parallel::Placement& placement, int64_t tp,
                         bool full, int64_t sample)
    : spec_(spec), on_(spec.on()), full_(full), tp_(std::max<int64_t>(1, tp)), sample_(uint64_t(sample))
{
  if (!on_)
    return;
  const int64_t n = placement.devices();
  per_stage_ = std::max<int64_t>(1, n / std::max<int64_t>(1, placement.coord(n - 1).stage + 1));
  own_.assign(size_t(n), 1.0);
  factor_.assign(size_t(n), 1.0);
  if (spec_.device_spread <= 0)
    return;
  const auto seed = uint64_t(spec_.seed);
  for (int64_t d = 0; d < n; ++d)
    own_[size_t(d)] = log_normal(normal_from_uniform(uniform({seed, sample_, kDeviceDraw, uint64_t(d)})),
                                 spec_.device_spread);
  if (full_) {
    factor_ = own_;
    return;
  }
  // Folded: the stage's representative goes at the pace of the stage's slowest device.
  for (int64_t first = 0; first < n; first += per_stage_) {
    const auto b = own_.begin() + first, e = own_.begin() + std::min(n, first + per_stage_);
    std::fill(factor_.begin() + first, factor_.begin() + (e - own_.begin()), *std::max_element(b, e));
  }
}

KernelFactor Variability::device(int64_t device) const
{
  if (!on_)
    return {};
  return {factor_[size_t(device)], own_[size_t(device)]};
}

KernelFactor Variability::kernel(int64_t device, int64_t unit, size_t step, double weight) const
{
  KernelFactor f = this->device(device);
  const double cv = spec_.kernel_jitter * weight;
  if (!on_ || cv <= 0)
    return f;
  const auto seed = uint64_t(spec_.seed);
  const uint64_t key_unit = uint64_t(unit), key_step = uint64_t(step);
  if (full_ || tp_ == 1) {
    const double j = log_normal(normal_from_uniform(uniform({seed, sample_, kKernelDraw, uint64_t(device), key_unit,
                                                             key_step})),
                                cv);
    return {f.time * j, f.own * j};
  }
  // Folded: the slowest of the tp group's draws (the largest of n uniforms is U^(1/n)), and the representative's
  // own: the largest with probability 1/n, otherwise uniform below it.
  const double n = double(tp_);
  const double u = uniform({seed, sample_, kFoldedKernelDraw, uint64_t(device), key_unit, key_step});
  const double q_max = -std::expm1(std::log(u) / n);  // P(Z > z_max)
  const double slowest = log_normal(normal_upper_quantile(q_max), cv);
  const double v = uniform({seed, sample_, kFoldedOwnDraw, uint64_t(device), key_unit, key_step});
  double own = slowest;
  if (v >= 1 / n) {
    const double below = (v - 1 / n) / (1 - 1 / n);  // uniform in (0, 1)
    own = log_normal(normal_upper_quantile(1 - (1 - q_max) * below), cv);
  }
  return {f.time * slowest, f.own * own};
}

}  // namespace dtsim::replay
