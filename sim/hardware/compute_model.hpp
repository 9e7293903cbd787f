#pragma once
/// Time of one kernel on one device: GEMMs at a shape-dependent fraction of peak, never faster than their
/// memory traffic allows; memory-bound kernels at the achieved fraction of memory bandwidth; no kernel shorter
/// than the device's minimum kernel time.
#include <string>

#include "hardware/hardware_spec.hpp"
#include "model/ops.hpp"
#include "stack/stack_spec.hpp"

namespace dtsim::hardware {

class ComputeModel {
 public:
  /// `precision` must be a key of device.peak_flops (checked when the scenario is validated). `stack`: the software
  /// that runs the kernels (its factors scale GEMM and memory-bound throughput); the default corrects nothing.
  ComputeModel(const DeviceSpec& device, const std::string& precision, const stack::StackSpec& stack = {});

  double gemm_efficiency(double batch, double m, double n, double k) const;
  double seconds(const model::Op& op) const;
  /// Seconds for a streaming kernel that moves `bytes`.
  double memory_seconds(double bytes) const;
  double peak_flops() const { return peak_; }

 private:
  DeviceSpec device_;
  stack::StackSpec stack_;
  double peak_;
  /// fp8 training runs only the linear layers' GEMMs in fp8; the other GEMMs run at the bf16 peak.
  double other_gemm_peak_;
};

}  // namespace dtsim::hardware
