#include "kernels/attention_kernel.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace dtsim::kernels {

namespace {

using Row = std::array<double, 6>;  // TFLOP/s at sequence 512, 1k, 2k, 4k, 8k, 16k

// Published BF16 throughput on H100 80GB SXM5 (dense BF16 peak 989 TFLOP/s), read from the values printed above the
// bars of FlashAttention-3 (Shah et al. 2024, arXiv:2407.08608): Fig. 5 (forward; batch x seq = 16k tokens, hidden
// 2048) and Fig. 6 (backward, without causal mask). Causal throughputs count half of the full FLOPs.
struct KernelRows {
  Row fwd64, fwd128, fwd128_causal, bwd64, bwd128;
};
// FlashAttention-2 (its sm80 kernels run on H100; the "FlashAttention-2" bars).
constexpr KernelRows kFa2H100{{282, 306, 318, 321, 322, 324},
                              {309, 350, 362, 368, 370, 370},
                              {191, 260, 298, 319, 333, 335},
                              {198, 238, 264, 279, 287, 291},
                              {214, 260, 291, 310, 318, 322}};
// cuDNN fused attention (the "cuDNN" bars; the paper used cuDNN 9).
constexpr KernelRows kCudnnH100{{335, 373, 395, 408, 412, 413},
                                {497, 574, 617, 609, 600, 595},
                                {315, 410, 484, 518, 529, 539},
                                {266, 348, 395, 417, 432, 433},
                                {305, 408, 465, 499, 518, 516}};
// FlashAttention-3.
constexpr KernelRows kFa3H100{{333, 392, 460, 476, 496, 497},
                              {467, 565, 625, 638, 646, 648},
                              {292, 423, 521, 579, 602, 616},
                              {272, 363, 422, 453, 472, 474},
                              {316, 424, 501, 542, 559, 561}};
constexpr double kH100Bf16Peak = 989;  // TFLOP/s, NVIDIA H100 datasheet (SXM), dense

// FlashAttention-2 on A100: its paper (Dao 2023, arXiv:2307.08691, Sec. 4.1) gives "up to 230 TFLOPs/s" forward on
// A100 80GB SXM4 (312 TFLOP/s peak); the same kernels reach 370 TFLOP/s forward on H100 (row fwd128 above, long
// sequences). No per-sequence A100 table is held in text, so the A100 efficiency is the H100 FlashAttention-2 one
// scaled by (230 / 312) / (370 / 989) = 1.970, both directions (an assumption: the backward's A100/H100 ratio is taken
// equal to the forward's). Check, not fitted: Azure AI-benchmarking-guide ND A100 v4 measures 179.5 TFLOP/s for
// FlashAttention-2 forward + backward, causal, batch 2, sequence 8192 (head dim 64 as the page states); this model
// gives 166 (-8%).
constexpr double kA100Scale = (230.0 / 312.0) / (370.0 / kH100Bf16Peak);

double log_interp(const Row& r, double seq)
{
  const double x = std::clamp(std::log2(seq / 512.0), 0.0, 5.0);
  const int i = std::min(int(x), 4);
  const double f = x - i;
  return r[size_t(i)] * (1 - f) + r[size_t(i) + 1] * f;
}

// Non-causal throughput at the head dimension, and the causal factor (causal over non-causal forward throughput at
// head dim 128, the only causal rows published; the backward and head dim 64 are assumed to lose the same share).
double tflops(const KernelRows& k, AttentionDirection dir, bool causal, double seq, double head_dim)
{
  const bool fwd = dir == AttentionDirection::Forward;
  const double lo = log_interp(fwd ? k.fwd64 : k.bwd64, seq), hi = log_interp(fwd ? k.fwd128 : k.bwd128, seq);
  const double f = std::clamp(std::log2(head_dim / 64.0), 0.0, 1.0);
  double t = lo * (1 - f) + hi * f;
  if (causal)
    t *= log_interp(k.fwd128_causal, seq) / log_interp(k.fwd128, seq);
  return t;
}

}  // namespace

bool hopper_class(const std::string& n)
{
  for (const char* h : {"H100", "H200", "H800", "GH200"})
    if (n.find(h) != std::string::npos)
      return true;
  return false;
}

stack::AttentionKernel attention_kernel_for(const std::string& device_name, stack::AttentionKernel kernel, bool given)
{
  using K = stack::AttentionKernel;
  if (!given || kernel == K::Unfused)
    return K::FlashAttention2;
  if (!hopper_class(device_name) && (kernel == K::FlashAttention3 || kernel == K::CuDnn))
    return K::FlashAttention2;
  return kernel;
}

double attention_efficiency(const std::string& device_name, stack::AttentionKernel kernel, AttentionDirection dir,
                            bool causal, double seq, double head_dim)
{
  using K = stack::AttentionKernel;
  if (!hopper_class(device_name))
    return kA100Scale * tflops(kFa2H100, dir, causal, seq, head_dim) / kH100Bf16Peak;
  const KernelRows& rows = kernel == K::FlashAttention3 ? kFa3H100 : kernel == K::CuDnn ? kCudnnH100 : kFa2H100;
  return tflops(rows, dir, causal, seq, head_dim) / kH100Bf16Peak;
}

}  // namespace dtsim::kernels
