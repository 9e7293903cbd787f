#include "kernels/compute_model.hpp"

#include <algorithm>
#include <cmath>

#include "core/diagnostics.hpp"
#include "kernels/attention_kernel.hpp"

namespace dtsim::kernels {

ComputeModel::ComputeModel(const hardware::DeviceSpec& device, const std::string& precision, const stack::StackSpec& stack)
    : device_(device), stack_(stack)
{
  auto it = device.peak_flops.find(precision);
  if (it == device.peak_flops.end())
    throw InternalError("no peak FLOP/s for precision " + precision + " on " + device.name);
  peak_ = it->second;
  other_gemm_peak_ = peak_;
  // Low-precision training (fp8, mxfp8, nvfp4) runs only the linear layers' GEMMs at that precision; the other GEMMs
  // (attention's, the router's, the logits') run at the bf16 peak.
  if (precision == "fp8" || precision == "mxfp8" || precision == "nvfp4") {
    auto bf16 = device.peak_flops.find("bf16");
    if (bf16 == device.peak_flops.end())
      throw InternalError(precision + " training needs a bf16 peak for its 16-bit GEMMs on " + device.name);
    other_gemm_peak_ = bf16->second;
    low_precision_ = true;
  }
  // The linear GEMMs' efficiency curve: the precision's own (device.efficiency.gemm_fp8, gemm_mxfp8, gemm_nvfp4).
  // A device without it is refused when the scenario is checked (no curve is borrowed from another precision).
  linear_gemm_ = device_.gemm;
  if (precision == "fp8") {
    if (!device_.has_gemm_fp8)
      throw InternalError("no device.efficiency.gemm_fp8 on " + device.name);
    linear_gemm_ = device_.gemm_fp8;
  }
  if (precision == "mxfp8" || precision == "nvfp4") {
    auto curve = device_.gemm_block_scaled.find(precision);
    if (curve == device_.gemm_block_scaled.end())
      throw InternalError("no device.efficiency.gemm_" + precision + " on " + device.name);
    linear_gemm_ = curve->second;
  }
  attention_ = attention_kernel_for(device, stack.attention, stack.attention_given);
}

double ComputeModel::curve_efficiency(const hardware::GemmEfficiency& g, double area, double k) const
{
  double fill = 1.0;
  if (g.half_area > 0) {
    double a = std::pow(area, g.area_exponent), half = std::pow(g.half_area, g.area_exponent);
    fill = a / (a + half);
  }
  double depth = g.half_k > 0 ? k / (k + g.half_k) : 1.0;
  return g.max * fill * depth;
}

double ComputeModel::gemm_efficiency(double batch, double m, double n, double k) const
{
  return curve_efficiency(device_.gemm, batch * m * n, k);
}

double ComputeModel::memory_seconds(double bytes) const
{
  return std::max(device_.kernel_min_s,
                  bytes / (device_.memory_bw_Bps * device_.memory_efficiency * stack_.factors.memory));
}

double ComputeModel::seconds(const model::Op& op) const
{
  double t = memory_seconds(op.bytes);
  if (op.kind == model::Op::Kind::Gemm && op.fused != model::Op::Fused::None) {
    // A fused attention kernel at its published throughput on this device (16-bit, whatever the training
    // precision). Published causal throughputs count the FLOPs the kernel does, half of the full score matrix that
    // dtsim counts: the kernel's time is that halved work over that throughput.
    const auto dir = op.fused == model::Op::Fused::AttentionForward ? AttentionDirection::Forward
                                                                      : AttentionDirection::Backward;
    const double rate = attention_flops_per_s(device_, attention_, dir, op.causal, op.attn_seq, op.attn_head_dim);
    const double work = op.flops() * (op.causal ? 0.5 : 1.0);
    return std::max(t, work / (rate * stack_.factors.compute));
  }
  if (op.kind == model::Op::Kind::Gemm) {
    // Low-precision linear GEMMs follow their precision's curve (linear_gemm_); the others the bf16 one.
    const auto& g = op.linear && low_precision_ ? linear_gemm_ : device_.gemm;
    // With area_exponent p > 1 the fitted curve makes a GEMM's compute time grow again as its output shrinks below
    // A* = half_area * (p - 1)^(1/p) (where area / efficiency is smallest). A GEMM is never slower than the same
    // GEMM padded to A* output elements, so smaller outputs take the padded GEMM's time (a router's 8 columns, say).
    const double area = op.batch * op.m * op.n;
    double padded = area;
    if (g.area_exponent > 1 && g.half_area > 0)
      padded = std::max(area, g.half_area * std::pow(g.area_exponent - 1, 1.0 / g.area_exponent));
    const double eff = curve_efficiency(g, padded, op.k);
    const double peak = peak_flops(op);
    t = std::max(t, op.flops() * (padded / area) / (peak * eff * stack_.factors.compute));
  }
  return t;
}

double ComputeModel::run_seconds(const std::vector<model::Op>& ops) const
{
  double gpu = 0, share = 0, expert_gemms = 0;
  for (const auto& op : ops) {
    gpu += seconds(op);
    share += op.layer_share;
    expert_gemms += op.expert_gemms;
  }
  const auto& h = stack_.host;
  // CUDA graphs replay the run from one graph launch: no per-kernel launch, no per-layer framework time. The expert
  // GEMMs a grouped linear layer issues one by one are host time either way (no graph holds dropless experts).
  const double host = (stack_.cuda_graphs ? (ops.empty() ? 0.0 : h.launch_s)
                                          : double(ops.size()) * h.launch_s + share * h.per_layer_s) +
                      expert_gemms * h.expert_gemm_s;
  return std::max(gpu, host);
}

}  // namespace dtsim::kernels
