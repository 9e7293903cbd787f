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

}  // namespace dtsim::report
