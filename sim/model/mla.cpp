#include "model/mla.hpp"

namespace dtsim::model {

std::vector<MlaKernel> mla_projections(const MlaSpec& a, int64_t hidden, int64_t heads, int64_t tp)
{
  using K = MlaKernel::Kind;
  const double h = double(hidden), hr = double(heads) / double(tp);
  const double q_lora = double(a.q_lora_rank), kv_lora = double(a.kv_lora_rank), rope = double(a.qk_rope_head_dim);
  const double qk = double(a.qk_head_dim()), kv_up = double(a.qk_nope_head_dim + a.v_head_dim);
  std::vector<MlaKernel> out;
  if (a.q_lora_rank > 0)
    out.push_back({"q_down", K::Linear, true, q_lora, h});
  out.push_back({"kv_down", K::Linear, true, kv_lora + rope, h});
  if (a.q_lora_rank > 0)
    out.push_back({"q_norm", K::Norm, true, q_lora, 0});
  out.push_back({"kv_norm", K::Norm, true, kv_lora, 0});
  // Without a query latent the queries are projected from the hidden state, which is then gathered too.
  out.push_back({"latents", K::Gather, false, (a.q_lora_rank > 0 ? q_lora : h) + kv_lora + rope, 0});
  out.push_back({"q_up", K::Linear, false, hr * qk, a.q_lora_rank > 0 ? q_lora : h});
  out.push_back({"kv_up", K::Linear, false, hr * kv_up, kv_lora});
  return out;
}

namespace {

double replicated_params(const MlaSpec& a, double h)  // down-projections and latent norms
{
  const double q_lora = double(a.q_lora_rank), kv_lora = double(a.kv_lora_rank);
  return (q_lora > 0 ? h * q_lora + q_lora : 0.0) + h * (kv_lora + double(a.qk_rope_head_dim)) + kv_lora;
}

double split_params(const MlaSpec& a, double h, double heads)  // up-projections and output projection
{
  const double q_in = a.q_lora_rank > 0 ? double(a.q_lora_rank) : h;
  return q_in * heads * double(a.qk_head_dim()) +
         double(a.kv_lora_rank) * heads * double(a.qk_nope_head_dim + a.v_head_dim) +
         heads * double(a.v_head_dim) * h;
}

}  // namespace

double mla_params(const MlaSpec& a, int64_t hidden, int64_t heads)
{
  return replicated_params(a, double(hidden)) + split_params(a, double(hidden), double(heads));
}

double mla_params_per_rank(const MlaSpec& a, int64_t hidden, int64_t heads, int64_t tp)
{
  return replicated_params(a, double(hidden)) + split_params(a, double(hidden), double(heads)) / double(tp);
}

double mla_forward_flops(const MlaSpec& a, int64_t hidden, int64_t heads, double tokens, double seq)
{
  const double h = double(hidden), n = double(heads);
  const double kv_lora = double(a.kv_lora_rank);
  const double matrices = replicated_params(a, h) - kv_lora - double(a.q_lora_rank) + split_params(a, h, n);
  const double core = 2.0 * tokens * seq * n * double(a.qk_head_dim() + a.v_head_dim);
  return 2.0 * tokens * matrices + core;
}

}  // namespace dtsim::model
