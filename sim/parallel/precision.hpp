#pragma once
/// A training precision and the bytes it stores per element: activations, weights, gradients and optimizer states
/// under mixed-precision training (Micikevicius et al. 2018; Adam's states as in Rajbhandari et al. 2019, Sec. 3.1:
/// 2 + 2 + 12 bytes per parameter), and fp8 linear layers as Transformer Engine runs them.
#include <string>

namespace dtsim::parallel {

struct Precision {
  std::string name = "bf16";  ///< training.precision, a key of the device's peak_flops: bf16, fp16, fp8 or fp32
  int activation_bytes = 2;   ///< per activation element kept or sent between kernels (fp8 too: see fp8_linear)
  int weight_bytes = 2;       ///< per weight held for compute and gathered (ZeRO-3)
  int gradient_bytes = 2;     ///< per gradient element held and reduced over the data-parallel group
  /// Optimizer state per parameter: an fp32 main copy of the weights plus Adam's momentum and variance (4 + 4 + 4);
  /// fp32 training needs no main copy (4 + 4).
  int optimizer_bytes_per_param = 12;
  /// fp8 linear layers (Transformer Engine): the GEMMs of the linear layers read 1-byte inputs, which is what they
  /// keep for backward, and an fp8 copy of the weights is kept across microbatches.
  bool fp8_linear = false;
};

/// The precision named `name` (one of those training.precision accepts).
Precision precision_of(const std::string& name);

}  // namespace dtsim::parallel
