#pragma once
/// Time of one kernel on one device: GEMMs at a shape-dependent fraction of peak (small outputs split over k, as
/// libraries run them: docs/calibration.md, "Small outputs: padding and split-K"), never faster than their
/// memory traffic allows; fused attention at its kernel's published throughput; memory-bound kernels at the achieved
/// fraction of memory bandwidth; no kernel shorter than the device's minimum kernel time. A run of kernels is never
/// shorter than the host takes to launch them (the stack's host overheads).
#include <string>
#include <vector>

#include "hardware/hardware_spec.hpp"
#include "model/ops.hpp"
#include "stack/stack_spec.hpp"

namespace dtsim::kernels {

class ComputeModel {
 public:
  /// `precision` must be a key of device.peak_flops (checked when the scenario is validated). `stack`: the software
  /// that runs the kernels (its factors scale GEMM and memory-bound throughput, its attention kernel times fused
  /// attention, its host overheads floor runs of kernels); the default corrects nothing.
  ComputeModel(const hardware::DeviceSpec& device, const std::string& precision, const stack::StackSpec& stack = {});

  double gemm_efficiency(double batch, double m, double n, double k) const;
  double seconds(const model::Op& op) const;
  /// A run of kernels issued back to back: their GPU time, or the host's time to launch them if longer (the GPU
  /// cannot run ahead of the host): kernels * launch + the run's share of the per-layer time; with CUDA graphs one
  /// launch for the run. Without host overheads, the sum of seconds(op), in order.
  double run_seconds(const std::vector<model::Op>& ops) const;
  /// The stack's host time per microbatch (0 without a stack).
  double microbatch_host_seconds() const { return stack_.host.per_microbatch_s; }
  /// The stack's time from a host synchronisation's return to the next kernel's start (0 without a stack).
  double sync_resume_seconds() const { return stack_.host.sync_resume_s; }
  /// Seconds for a streaming kernel that moves `bytes`.
  double memory_seconds(double bytes) const;
  /// The precision's peak FLOP/s.
  double peak_flops() const { return peak_; }
  /// The peak a GEMM `op` runs against: the precision's for a linear layer's GEMM, the bf16 peak for the others
  /// under a low precision (attention's, the router's, the logits').
  double peak_flops(const model::Op& op) const { return op.linear ? peak_ : other_gemm_peak_; }
  /// Whether some GEMMs run against another peak than the precision's (peak_flops(op)).
  bool mixed_peaks() const { return other_gemm_peak_ != peak_; }
  /// The fused attention kernel this model times (FlashAttention-2 unless the stack names another that runs here).
  stack::AttentionKernel attention_kernel() const { return attention_; }

 private:
  double curve_efficiency(const hardware::GemmEfficiency& g, double area, double k) const;
  /// Compute time of a GEMM of `flops` with `area` output elements and depth `k` on curve `g` at `peak` FLOP/s,
  /// priced as the same GEMM padded to the curve's best area A* when its output is smaller.
  double padded_gemm_seconds(const hardware::GemmEfficiency& g, double peak, double flops, double area,
                             double k) const;
  /// Compute time of GEMM `op` on curve `g` at `peak`: the padded GEMM, or below A* its k split into slices and
  /// their partial sums reduced, whichever is shorter.
  double gemm_seconds(const hardware::GemmEfficiency& g, double peak, const model::Op& op) const;
  hardware::DeviceSpec device_;
  stack::StackSpec stack_;
  double peak_;
  /// Low-precision training runs only the linear layers' GEMMs at its peak; the other GEMMs run at the bf16 peak.
  double other_gemm_peak_;
  bool low_precision_ = false;
  /// The efficiency curve of the linear layers' GEMMs under a low precision.
  hardware::GemmEfficiency linear_gemm_;
  stack::AttentionKernel attention_;
};

}  // namespace dtsim::kernels
