#include "report/run_report.hpp"

#include "report/system_sections.hpp"

namespace dtsim::report {

stack::StepInterval SystemSections::step_interval(const RunReport& r, double step_s) const
{
  return stack::step_interval(r.scenario->stack, step_s);
}

Derived derive(const RunReport& r)
{
  Derived d;
  const auto& s = *r.scenario;
  d.power_W = double(s.devices) * s.hardware.device_power_W();
  d.step = r.simulated ? r.replay.step_time_s : 0.0;
  if (d.step <= 0)
    return d;
  d.energy_J = d.power_W * d.step;
  const double devices = double(s.devices);
  const double peak = s.hardware.peak_flops(s.training.precision);
  d.samples_per_s = double(s.training.global_batch) / d.step;
  d.tokens_per_s = d.samples_per_s * double(s.training.seq_len);
  d.model_tflops = r.model_flops / d.step / devices / 1e12;
  d.hw_tflops = r.hardware_flops / d.step / devices / 1e12;
  d.mfu = d.model_tflops * 1e12 / peak;
  d.hfu = d.hw_tflops * 1e12 / peak;
  return d;
}

StepSpread step_spread(const RunReport& r)
{
  std::vector<double> x = r.replay.sample_steps;
  StepSpread s;
  if (!r.simulated || x.size() < 2)
    return s;
  std::sort(x.begin(), x.end());
  auto at = [&](double p) {
    const double pos = p * double(x.size() - 1);
    const size_t i = size_t(pos);
    const double f = pos - double(i);
    return i + 1 < x.size() ? x[i] + f * (x[i + 1] - x[i]) : x[i];
  };
  s.known = true;
  s.p5 = at(0.05);
  s.p50 = at(0.50);
  s.p95 = at(0.95);
  return s;
}

}  // namespace dtsim::report
