#pragma once
/// Multi-head latent attention (MLA; DeepSeek-V2, arXiv 2405.04434, Sec. 2.1; DeepSeek-V3, arXiv 2412.19437,
/// Sec. 2.1.1): queries, keys and values are projected up from low-rank latents, and a small decoupled part of each
/// query and key carries the rotary embedding. Shapes and parameters of its projections on one tensor-parallel rank.
///
/// Tensor parallelism as Megatron-Core's MLASelfAttention with its Transformer Engine layer spec
/// (megatron/core/transformer/multi_latent_attention.py): the down-projections (q_a: hidden -> q_lora_rank,
/// kv_a: hidden -> kv_lora_rank + qk_rope_head_dim) are TELinear with parallel_mode "duplicated": every rank holds
/// them whole and runs them on the tokens it holds (its 1/tp share under sequence parallelism); the latents are
/// then gathered over the TP group (sequence parallel; without it, Megatron's f operator: identity forward,
/// all-reduce backward) and the up-projections (q_b, kv_b) and the output projection are column and row parallel,
/// heads split over tp. So the TP traffic before attention is the latents' width, not hidden_size.
#include <cstdint>
#include <string>
#include <vector>

namespace dtsim::model {

struct MlaSpec {
  int64_t q_lora_rank = 0;   ///< 0: queries projected from the hidden state directly (DeepSeek-V2-Lite)
  int64_t kv_lora_rank = 0;  ///< 0: the model has no MLA
  int64_t qk_nope_head_dim = 0, qk_rope_head_dim = 0, v_head_dim = 0;
  bool enabled() const { return kv_lora_rank > 0; }
  int64_t qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
};

/// One step of MLA's projections on one TP rank, in forward order.
struct MlaKernel {
  /// Linear: a GEMM (tokens x k) * (k x n) with parameters; Norm: an RMSNorm over width n; Gather: the latents
  /// (width n) exchanged over the TP group before the up-projections.
  enum class Kind { Linear, Norm, Gather };
  std::string name;
  Kind kind = Kind::Linear;
  bool own_tokens = false;  ///< runs on the rank's own tokens (1/tp of them under sequence parallelism)
  double n = 0, k = 0;
};

/// The projections before the attention core (down, norms, gather, up), for `heads` heads split over `tp`.
std::vector<MlaKernel> mla_projections(const MlaSpec& mla, int64_t hidden, int64_t heads, int64_t tp);

/// Parameters of the attention block (projections, output projection and the two latent RMSNorms), whole.
double mla_params(const MlaSpec& mla, int64_t hidden, int64_t heads);
/// Of those, what one TP rank holds: the down-projections and latent norms whole, the rest divided by tp.
double mla_params_per_rank(const MlaSpec& mla, int64_t hidden, int64_t heads, int64_t tp);
/// Forward FLOPs of the attention block for `tokens` tokens of sequences of `seq`, whole: 2 * tokens * params of
/// the projections, plus scores (2 * tokens * seq * heads * qk_head_dim) and attention over values
/// (2 * tokens * seq * heads * v_head_dim), counted without the causal half as Narayanan et al. 2021 count them.
double mla_forward_flops(const MlaSpec& mla, int64_t hidden, int64_t heads, double tokens, double seq);

}  // namespace dtsim::model
