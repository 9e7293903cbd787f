#include "parallel/precision.hpp"

#include "stack/optimizer_state.hpp"

namespace dtsim::parallel {

namespace {

// Block scaling (OCP Microscaling Formats v1.0; NVIDIA's NVFP4): data bytes per element plus one scale byte per
// block. MXFP8: E4M3 data, one E8M0 scale per 32 elements (Transformer Engine's MXFP8BlockScaling, 1x32 blocks).
// NVFP4: E2M1 data (half a byte), one E4M3 scale per 16 elements (NVFP4BlockScaling, 1x16 blocks); its per-tensor
// FP32 scale is a few bytes per tensor and left out.
constexpr double kMxfp8ScaleBytes = 1.0 / 32;
constexpr double kNvfp4ScaleBytes = 1.0 / 16;
constexpr double kMxfp8Bytes = 1.0 + kMxfp8ScaleBytes;
constexpr double kNvfp4Bytes = 0.5 + kNvfp4ScaleBytes;

}  // namespace

bool low_precision_linear(const std::string& name) { return name == "fp8" || name == "mxfp8" || name == "nvfp4"; }

double gathered_layer_weight_bytes(const Precision& p, bool fp8_params)
{
  if (fp8_params && p.name == "fp8")
    return 1.0;
  // NVFP4 weights (Megatron-Core's fp4_param, core 0.17.1 distributed/param_and_grad_buffer.py): the parameter
  // buffer holds each weight's packed row-wise E2M1 data, numel / 2 bytes, and that buffer is all-gathered; the
  // block scales are not gathered (each rank computes them from block amaxes all-reduced over dp in
  // Transformer Engine 2.14's quantize_master_weights, tensor/utils.py, _cast_master_weights_to_nvfp4_2d).
  if (fp8_params && p.name == "nvfp4")
    return 0.5;
  return double(p.weight_bytes);
}

Precision precision_of(const std::string& name)
{
  Precision p;
  p.name = name;
  if (name == "fp32") {
    p.activation_bytes = p.weight_bytes = p.gradient_bytes = 4;
    p.optimizer_bytes_per_param = 8;
  }
  // bf16, fp16, fp8, mxfp8 and nvfp4 keep the 16-bit defaults; the low precisions change only the linear layers'
  // GEMM inputs and add the weights' low-precision copies.
  p.fp8_linear = low_precision_linear(name);
  if (name == "fp8")
    p.weight_copy_bytes = 1;
  // Both directions of every block-scaled weight: Transformer Engine quantizes a tensor row-wise for one GEMM and
  // column-wise for the other (the blocks run along the reduction dimension, so a transpose is not a copy), and
  // keeps both for the step (MXFP8Quantizer / NVFP4Quantizer with rowwise and columnwise usage).
  if (name == "mxfp8") {
    p.block_scaled_bytes = kMxfp8Bytes;
    p.block_scale_bytes = kMxfp8ScaleBytes;
    p.weight_copy_bytes = 2 * kMxfp8Bytes;
  }
  if (name == "nvfp4") {
    p.block_scaled_bytes = kNvfp4Bytes;
    p.block_scale_bytes = kNvfp4ScaleBytes;
    p.weight_copy_bytes = 2 * kNvfp4Bytes;
    p.per_tensor_amax = true;
    // Transformer Engine 2.13 (common/gemm/cublaslt_gemm.cu, cublas_gemm): an NVFP4 GEMM whose operands carry
    // per-tensor amaxes first computes its alpha from them on the device (nvte_nvfp4_compute_per_tensor_scale,
    // common/recipe/nvfp4.cu), a kernel of its own on the GEMM's stream.
    p.per_gemm_scale_kernel = true;
    // NVFP4BlockScaling's random Hadamard transforms of the inputs' and gradients' column-wise (wgrad) copies cost no
    // pass of their own in Transformer Engine 2.14 (the 26.04 containers'): model/transformer.cpp, block_cast.
    p.columnwise_transposed = true;
    // Transformer Engine 2.14.1 (module/layernorm_linear.py, LayerNormLinear forward): the layernorm output is
    // quantized on the rank's rows with both usages, and when it is all-gathered for backward (ln_out_needs_gather:
    // column-parallel under sequence parallelism) update_usage(rowwise_usage=False) runs only for MXFP8 and
    // Float8Blockwise tensors, so an NVFP4 input is saved with its row-wise copy as well as the column-wise one
    // gathered for the weight gradient (NVFP4Quantizer keeps the base supports_only_rowwise_all_gather, False).
    p.saves_gathered_input_rowwise = true;
  }
  return p;
}

Precision training_precision(const scenario::ScenarioSpec& s)
{
  Precision p = precision_of(s.training.precision);
  // Megatron-LM keeps gradients in an fp32 main_grad buffer and reduces them in fp32 under bf16 training
  // (megatron/arguments.py forces accumulate_allreduce_grads_in_fp32 with --bf16): 4 bytes held and sent.
  if (s.stack.memory.fp32_gradients && p.gradient_bytes < 4)
    p.gradient_bytes = 4;
  const bool fp32_weights = s.training.precision == "fp32";
  p.optimizer_bytes_per_param = stack::optimizer_state_bytes(s.training.optimizer_state, fp32_weights);
  return p;
}

}  // namespace dtsim::parallel
