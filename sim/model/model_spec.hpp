#pragma once
/// A transformer's architecture, read from Hugging Face style config keys.
#include <cstdint>
#include <string>

#include "model/mla.hpp"

namespace dtsim::model {

enum class Family {
  GptDecoder,  ///< causal decoder, two-matrix GELU MLP (GPT-2/3, GPT-J, GPT-NeoX, Megatron GPT)
  GatedDecoder,  ///< causal decoder, three-matrix gated MLP (llama-style, hidden_act silu)
  Encoder,     ///< bidirectional encoder with a masked-LM head (BERT)
};

struct ModelSpec {
  std::string file;
  std::string name;  ///< file stem, for reports
  Family family = Family::GptDecoder;
  int64_t hidden = 0;       ///< hidden_size (h)
  int64_t layers = 0;       ///< num_hidden_layers (l)
  int64_t heads = 0;        ///< num_attention_heads (a)
  int64_t kv_heads = 0;     ///< num_key_value_heads (= heads without grouped-query attention)
  int64_t head_dim = 0;     ///< head_dim (= hidden / heads unless given)
  int64_t ffn = 0;          ///< intermediate_size
  int64_t vocab = 0;        ///< vocab_size (V)
  int64_t max_positions = 0;  ///< max_position_embeddings
  bool tied_embeddings = true;
  bool learned_positions = true;  ///< a position-embedding table (GPT-2/3, BERT); rotary models have none
  int64_t experts = 0;            ///< routed experts per MoE layer (num_local_experts, num_experts, n_routed_experts)
  int64_t experts_per_token = 0;  ///< routed experts per token (num_experts_per_tok)
  /// Width of one routed expert's MLP (moe_intermediate_size; intermediate_size when not given, Mixtral's way).
  int64_t expert_ffn = 0;
  /// Width of the shared experts' MLP, all of them together, beside the routed ones in every MoE layer (DeepSeek:
  /// n_shared_experts * moe_intermediate_size; Qwen2-MoE: shared_expert_intermediate_size); 0: none.
  int64_t shared_ffn = 0;
  /// Qwen2-MoE's sigmoid gate on the shared expert's output (one h x 1 matrix per layer).
  bool shared_expert_gate = false;
  /// The first layers of a model with experts that keep a dense MLP of intermediate_size (first_k_dense_replace).
  int64_t dense_layers = 0;
  /// Node-limited routing (DeepSeek's group-limited top-k): the routed experts form expert_groups groups (n_group)
  /// and each token picks its experts from groups_per_token of them (topk_group); 0 or equal counts: unrestricted.
  int64_t expert_groups = 0, groups_per_token = 0;
  /// Adaptive layer-norm conditioning (DiT's adaLN-Zero: 6): every layer's linear layer (with bias) from one
  /// conditioning vector per sample, hidden wide, to this many hidden-wide shifts, scales and gates; 0: none.
  int64_t conditioning_outputs = 0;
  /// Multi-head latent attention (DeepSeek-V2/V3) instead of multi-head or grouped-query attention.
  MlaSpec mla;

  bool moe() const { return experts > 0; }
  /// Width of one routed expert's MLP.
  int64_t expert_width() const { return expert_ffn > 0 ? expert_ffn : ffn; }
  /// Whether layer `l` (0-based) has experts: all but the first dense_layers of a model with experts.
  bool moe_layer(int64_t l) const { return moe() && l >= dense_layers; }
  /// Query (and key) width and value width of all heads: heads * head_dim each, or MLA's heads * 192 and 128.
  int64_t qk_width() const { return heads * (mla.enabled() ? mla.qk_head_dim() : head_dim); }
  int64_t v_width() const { return heads * (mla.enabled() ? mla.v_head_dim : head_dim); }
};

/// Tokens the busiest expert-parallel rank receives relative to the mean, when the busiest expert gets `imbalance`
/// times the mean and the other experts of its rank the mean: 1 + (imbalance - 1) * ep / experts (a rank holding
/// every expert sees no imbalance; one expert per rank sees all of it). 1 for a model without experts.
inline double expert_rank_imbalance(const ModelSpec& m, double imbalance, int64_t ep)
{
  return m.experts > 0 ? 1.0 + (imbalance - 1.0) * double(ep) / double(m.experts) : 1.0;
}

}  // namespace dtsim::model
