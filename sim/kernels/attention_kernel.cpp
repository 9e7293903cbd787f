#include "kernels/attention_kernel.hpp"

#include <algorithm>
#include <cmath>

#include "core/diagnostics.hpp"

namespace dtsim::kernels {

namespace {

using Row = hardware::AttentionTable::Row;

double log_interp(const Row& r, double seq)
{
  const double x = std::clamp(std::log2(seq / 512.0), 0.0, 5.0);
  const int i = std::min(int(x), 4);
  const double f = x - i;
  return r[size_t(i)] * (1 - f) + r[size_t(i) + 1] * f;
}

// Non-causal throughput at the head dimension, and the causal factor (causal over non-causal forward throughput at
// head dim 128, the only causal rows published; the backward and head dim 64 are assumed to lose the same share).
double flops_per_s(const hardware::AttentionTable& k, AttentionDirection dir, bool causal, double seq,
                   double head_dim)
{
  const bool fwd = dir == AttentionDirection::Forward;
  const double lo = log_interp(fwd ? k.forward_d64 : k.backward_d64, seq);
  const double hi = log_interp(fwd ? k.forward_d128 : k.backward_d128, seq);
  const double f = std::clamp(std::log2(head_dim / 64.0), 0.0, 1.0);
  double t = lo * (1 - f) + hi * f;
  if (causal)
    t *= log_interp(k.forward_d128_causal, seq) / log_interp(k.forward_d128, seq);
  return t;
}

}  // namespace

const char* attention_figures_key(stack::AttentionKernel kernel)
{
  using K = stack::AttentionKernel;
  switch (kernel) {
    case K::FlashAttention3: return "flash_attention_3";
    case K::CuDnn: return "cudnn";
    case K::FlashAttention2:
    case K::Unfused: break;
  }
  return "flash_attention_2";
}

bool has_attention_figures(const hardware::DeviceSpec& device, stack::AttentionKernel kernel)
{
  return device.attention.count(attention_figures_key(kernel)) > 0;
}

stack::AttentionKernel attention_kernel_for(const hardware::DeviceSpec& device, stack::AttentionKernel kernel,
                                            bool given)
{
  using K = stack::AttentionKernel;
  if (!given || kernel == K::Unfused || !has_attention_figures(device, kernel))
    return K::FlashAttention2;
  return kernel;
}

double attention_flops_per_s(const hardware::DeviceSpec& device, stack::AttentionKernel kernel,
                             AttentionDirection dir, bool causal, double seq, double head_dim)
{
  auto it = device.attention.find(attention_figures_key(kernel));
  if (it == device.attention.end())
    throw InternalError(std::string("no device.efficiency.attention.") + attention_figures_key(kernel) + " on " +
                        device.name);
  return flops_per_s(it->second, dir, causal, seq, head_dim);
}

}  // namespace dtsim::kernels
