#pragma once
/// A training precision and the bytes it stores per element: activations, weights, gradients and optimizer states
/// under mixed-precision training (Micikevicius et al. 2018; Adam's states as in Rajbhandari et al. 2019, Sec. 3.1:
/// 2 + 2 + 12 bytes per parameter), and the low-precision linear layers of Transformer Engine's recipes: fp8
/// (per-tensor scaling), mxfp8 (MXFP8BlockScaling) and nvfp4 (NVFP4BlockScaling); docs/precisions.md.
#include <string>

#include "scenario/scenario_spec.hpp"

namespace dtsim::parallel {

struct Precision {
  /// training.precision, a key of the device's peak_flops: bf16, fp16, fp8, mxfp8, nvfp4 or fp32
  std::string name = "bf16";
  int activation_bytes = 2;   ///< per activation element kept or sent between kernels (fp8 too: see fp8_linear)
  int weight_bytes = 2;       ///< per weight held for compute and gathered (ZeRO-3)
  int gradient_bytes = 2;     ///< per gradient element held and reduced over the data-parallel group
  /// Optimizer state per parameter: an fp32 main copy of the weights plus Adam's momentum and variance (4 + 4 + 4);
  /// fp32 training needs no main copy (4 + 4). training_precision sets it from training.optimizer_state.
  double optimizer_bytes_per_param = 12;
  /// Low-precision linear layers (fp8, mxfp8, nvfp4): the GEMMs of the linear layers (QKV, projection, MLP,
  /// experts: forward, input gradient and weight gradient) read low-precision inputs at that precision's peak, and a
  /// low-precision copy of the weights is kept across microbatches; attention, the router, the logits and the
  /// embedding stay 16-bit.
  bool fp8_linear = false;
  /// Bytes per weight of the low-precision copies kept beside the 16-bit weights (0 without low-precision linear
  /// layers): fp8 one 1-byte copy; mxfp8 and nvfp4 a row-wise and a column-wise copy, each with its block scales.
  double weight_copy_bytes = 0;
  /// Bytes per element of one block-scaled copy of a linear layer's input (data and its block's share of a scale):
  /// mxfp8 1 + 1/32 (E4M3 data, one E8M0 scale per 32), nvfp4 1/2 + 1/16 (E2M1 data, one E4M3 scale per 16);
  /// 0 for the other precisions.
  double block_scaled_bytes = 0;
  /// NVFP4's second scaling level, one FP32 scale per tensor: an amax pass over each tensor before its cast.
  bool per_tensor_amax = false;
  /// Column-wise copies stored transposed (NVFP4): gathered along the tokens they arrive interleaved by rank, and a
  /// copy puts them in order.
  bool columnwise_transposed = false;
  /// Bytes of block scales per element of one block-scaled copy (mxfp8 1/32, nvfp4 1/16; 0 otherwise): what a
  /// swizzle of a GEMM operand's scales into the layout the GEMM reads moves, each way.
  double block_scale_bytes = 0;
  /// NVFP4: before each GEMM a one-thread kernel turns the two operands' per-tensor amaxes into the GEMM's alpha.
  bool per_gemm_scale_kernel = false;
  /// NVFP4: an input gathered under sequence parallelism is saved for backward with its row-wise copy beside the
  /// column-wise one the weight gradient reads (Transformer Engine drops the row-wise copy only for MXFP8).
  bool saves_gathered_input_rowwise = false;

  /// Bytes per parameter of the model's weights and the optimizer's states, as the memory check holds them
  /// unsharded: what a checkpoint saves (report/time_to_train.cpp).
  double model_and_optimizer_bytes_per_param() const { return weight_bytes + optimizer_bytes_per_param; }
};

/// The precision named `name` (one of those training.precision accepts).
Precision precision_of(const std::string& name);

/// Bytes per transformer-layer weight as the data-parallel all-gather moves it and the gathering rank holds it
/// (ZeRO-3 / FSDP): one under per-tensor fp8 with fp8 parameters (training.fp8_params: Megatron-Core gathers its
/// uint8 parameter buffer; torchao's float8 all-gather, torchtitan's `enable_fsdp_float8_all_gather`, casts each
/// shard to float8 before the gather and keeps the gathered float8 data as the unsharded weight), else
/// weight_bytes. MXFP8 weights are gathered in 16-bit; NVFP4 weights held as NVFP4 (Megatron-Core's fp4_param) as
/// their packed row-wise data, half a byte each (the column-wise copy Transformer Engine transposes from it after
/// the gather, post_all_gather_processing, is not counted among the bytes a ZeRO-3 rank holds).
double gathered_layer_weight_bytes(const Precision& p, bool fp8_params);

/// The precision a scenario trains in, with the stack's and the scenario's choices: gradients held and reduced in fp32
/// where the stack keeps them so (memory.fp32_gradients), the optimizer's states as training.optimizer_state holds
/// them. The plan's precision (derive_plan) and so the memory check's, and the checkpoint's bytes.
Precision training_precision(const scenario::ScenarioSpec& s);

/// Whether `name` runs the linear layers' GEMMs in a low precision (fp8, mxfp8, nvfp4): the other GEMMs need the
/// device's bf16 peak.
bool low_precision_linear(const std::string& name);

}  // namespace dtsim::parallel
