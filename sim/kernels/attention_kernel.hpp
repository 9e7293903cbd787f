#pragma once
/// Fused attention kernels as they run: FlashAttention-2, FlashAttention-3 and cuDNN's fused attention at the
/// throughput published for them on the device, by direction, causal masking, head dimension and sequence length.
/// The figures are the hardware file's (device.efficiency.attention.KERNEL; docs/calibration.md, "Fused attention
/// kernels"): a kernel without figures there does not run on the device. Published causal throughputs count the
/// FLOPs a causal kernel does (half of the full score matrix); attention_flops_per_s() returns exactly that figure,
/// and ComputeModel halves the counted work of a causal kernel before dividing by it.
#include <string>

#include "hardware/hardware_spec.hpp"
#include "stack/stack_spec.hpp"

namespace dtsim::kernels {

enum class AttentionDirection { Forward, Backward };

/// The key of a kernel's figures in device.efficiency.attention: flash_attention_2, flash_attention_3, cudnn.
const char* attention_figures_key(stack::AttentionKernel kernel);

/// The kernel that runs fused attention on `device` for a stack that names `kernel` (`given`: the stack names one).
/// No kernel named, or Unfused named while the scenario fuses attention: FlashAttention-2, the conservative
/// default. A named kernel the device has no figures for (FlashAttention-3 off Hopper: its kernels are sm90 only)
/// gives way to FlashAttention-2, as Transformer Engine's backend choice does.
stack::AttentionKernel attention_kernel_for(const hardware::DeviceSpec& device, stack::AttentionKernel kernel,
                                            bool given);

/// Whether the device file holds the kernel's figures.
bool has_attention_figures(const hardware::DeviceSpec& device, stack::AttentionKernel kernel);

/// The kernel's published throughput on the device, FLOP/s as the benchmark counts them (halved for causal
/// masking), for sequences of `seq` queries and keys and heads of `head_dim`. Interpolated linearly in log2(seq)
/// between 512 and 16k and in log2(head_dim) between 64 and 128, clamped outside. The device must hold the
/// kernel's figures (InternalError otherwise: validation checks it first).
double attention_flops_per_s(const hardware::DeviceSpec& device, stack::AttentionKernel kernel,
                             AttentionDirection dir, bool causal, double seq, double head_dim);

}  // namespace dtsim::kernels
