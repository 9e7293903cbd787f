#include "hardware/compute_model.hpp"

#include <algorithm>
#include <cmath>

#include "core/diagnostics.hpp"

namespace dtsim::hardware {

ComputeModel::ComputeModel(const DeviceSpec& device, const std::string& precision, const stack::StackSpec& stack)
    : device_(device), stack_(stack)
{
  auto it = device.peak_flops.find(precision);
  if (it == device.peak_flops.end())
    throw InternalError("no peak FLOP/s for precision " + precision + " on " + device.name);
  peak_ = it->second;
  other_gemm_peak_ = peak_;
  if (precision == "fp8") {
    auto bf16 = device.peak_flops.find("bf16");
    if (bf16 == device.peak_flops.end())
      throw InternalError("fp8 training needs a bf16 peak for its 16-bit GEMMs on " + device.name);
    other_gemm_peak_ = bf16->second;
  }
}

double ComputeModel::gemm_efficiency(double batch, double m, double n, double k) const
{
  const auto& g = device_.gemm;
  double area = batch * m * n;
  double fill = 1.0;
  if (g.half_area > 0) {
    double a = std::pow(area, g.area_exponent), half = std::pow(g.half_area, g.area_exponent);
    fill = a / (a + half);
  }
  double depth = g.half_k > 0 ? k / (k + g.half_k) : 1.0;
  return g.max * fill * depth;
}

double ComputeModel::memory_seconds(double bytes) const
{
  return std::max(device_.kernel_min_s,
                  bytes / (device_.memory_bw_Bps * device_.memory_efficiency * stack_.factors.memory));
}

double ComputeModel::seconds(const model::Op& op) const
{
  double t = memory_seconds(op.bytes);
  if (op.kind == model::Op::Kind::Gemm) {
    // With area_exponent p > 1 the fitted curve makes a GEMM's compute time grow again as its output shrinks below
    // A* = half_area * (p - 1)^(1/p) (where area / efficiency is smallest). A GEMM is never slower than the same
    // GEMM padded to A* output elements, so smaller outputs take the padded GEMM's time (a router's 8 columns, say).
    const auto& g = device_.gemm;
    const double area = op.batch * op.m * op.n;
    double padded = area;
    if (g.area_exponent > 1 && g.half_area > 0)
      padded = std::max(area, g.half_area * std::pow(g.area_exponent - 1, 1.0 / g.area_exponent));
    const double eff = gemm_efficiency(1, padded, 1, op.k);
    const double peak = op.linear ? peak_ : other_gemm_peak_;
    t = std::max(t, op.flops() * (padded / area) / (peak * eff * stack_.factors.compute));
  }
  return t;
}

}  // namespace dtsim::hardware
