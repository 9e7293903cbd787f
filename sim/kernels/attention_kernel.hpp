#pragma once
/// Fused attention kernels as they run: the fraction of the 16-bit peak that FlashAttention-2, FlashAttention-3 and
/// cuDNN's fused attention reach, by direction, causal masking, head dimension and sequence length, from the kernels'
/// published throughput measurements (docs/calibration.md, "Fused attention kernels"). Published causal throughputs
/// count the FLOPs a causal kernel does (half of the full score matrix); efficiency() returns exactly that figure,
/// over the device's 16-bit peak, and ComputeModel halves the counted work of a causal kernel before dividing by it.
#include <string>

#include "stack/stack_spec.hpp"

namespace dtsim::kernels {

enum class AttentionDirection { Forward, Backward };

/// The kernel that runs fused attention on `device_name` for a stack that names `kernel` (`given`: the stack names
/// one). No kernel named, or Unfused named while the scenario fuses attention: FlashAttention-2, the conservative
/// default on both A100 and H100. FlashAttention-3 runs only on Hopper (sm90); on another device it falls back to
/// FlashAttention-2, and so does cuDNN (no published cuDNN measurement held off Hopper).
stack::AttentionKernel attention_kernel_for(const std::string& device_name, stack::AttentionKernel kernel, bool given);

/// Whether the device is Hopper-class (H100, H200, H800, GH200): the measurements were taken on H100 SXM5.
bool hopper_class(const std::string& device_name);

/// Published throughput of the kernel over the device's 16-bit dense peak (FLOPs as the benchmark counts them:
/// halved for causal masking), for sequences of `seq` queries and keys and heads of `head_dim`. Interpolated linearly
/// in log2(seq) between 512 and 16k and in log2(head_dim) between 64 and 128, clamped outside.
double attention_efficiency(const std::string& device_name, stack::AttentionKernel kernel, AttentionDirection dir,
                            bool causal, double seq, double head_dim);

}  // namespace dtsim::kernels
