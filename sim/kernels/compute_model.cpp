#include "kernels/compute_model.hpp"

#include <algorithm>
#include <cmath>

#include "core/diagnostics.hpp"
#include "kernels/attention_kernel.hpp"

namespace dtsim::kernels {

namespace {

// Split-K (ComputeModel::gemm_seconds): the shallowest slice of k one unit of a split reduction gets. CUTLASS's
// stream-K scheduler gives each unit at least min_iters_per_sk_unit_ = 8 k-tiles (NVIDIA/cutlass,
// include/cutlass/gemm/kernel/tile_scheduler_params.h @ 0046e36, PersistentTileSchedulerSm90StreamKParams), and its
// Hopper 16-bit GEMMs step k by 64 elements (the 128x128x64 CTA tile of its sm90 kernels): 512.
constexpr double kMinSliceDepth = 8 * 64;
// The slices' partial sums are kept in the fp32 accumulator type: each slice writes its share, the reduction reads
// it back (CUTLASS's GemmSplitKParallel writes a workspace that ReduceSplitK sums; cuBLASLt's
// CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE keeps partials in the compute type and reduces them in a separate step).
constexpr double kPartialSumBytes = 4;

// A* = half_area * (p - 1)^(1/p): the output area at which a curve with area_exponent p > 1 gives the least compute
// time per output element (area / efficiency); 0 for p <= 1, whose time per element falls all the way.
double best_area(const hardware::GemmEfficiency& g)
{
  return g.area_exponent > 1 && g.half_area > 0 ? g.half_area * std::pow(g.area_exponent - 1, 1.0 / g.area_exponent)
                                                : 0.0;
}

}  // namespace

ComputeModel::ComputeModel(const hardware::DeviceSpec& device, const std::string& precision,
                           const stack::StackSpec& stack)
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
    t = std::max(t, gemm_seconds(g, peak_flops(op), op));
  }
  return t;
}

double ComputeModel::padded_gemm_seconds(const hardware::GemmEfficiency& g, double peak, double flops, double area,
                                         double k) const
{
  // With area_exponent p > 1 the fitted curve makes a GEMM's compute time grow again as its output shrinks below A*.
  // A GEMM is never slower than the same GEMM padded to A* output elements (tiles that compute nothing).
  const double padded = std::max(area, best_area(g));
  const double eff = curve_efficiency(g, padded, k);
  return flops * (padded / area) / (peak * eff * stack_.factors.compute);
}

double ComputeModel::gemm_seconds(const hardware::GemmEfficiency& g, double peak, const model::Op& op) const
{
  const double area = op.batch * op.m * op.n;
  double best = padded_gemm_seconds(g, peak, op.flops(), area, op.k);
  // Below A* libraries split k rather than leave the device idle (cuBLASLt's split-K algorithms, CUTLASS's split-K
  // and stream-K, hipBLASLt's GlobalSplitU): s slices of depth k / s each compute a partial output, run as one GEMM
  // of s x area outputs, then a reduction sums the fp32 partials. They split only as far as fills the device once
  // (s x area <= A*, as CUTLASS's stream-K units fill at most one wave and its split count is capped at the SM
  // count), with slices no shallower than kMinSliceDepth; the best such split is taken if it beats the padded GEMM.
  // Above A* the fitted curve stands as measured: the libraries' own choices are in its points.
  const double a_star = best_area(g);
  if (area <= 0 || area >= a_star)
    return best;
  double slices = std::min(std::floor(a_star / area), std::floor(op.k / kMinSliceDepth));
  if (device_.sm_count > 0)
    slices = std::min(slices, double(device_.sm_count));
  for (double s = 2; s <= slices; ++s) {
    const double reduction = memory_seconds(2 * kPartialSumBytes * s * area);
    best = std::min(best, padded_gemm_seconds(g, peak, op.flops(), s * area, op.k / s) + reduction);
  }
  return best;
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
