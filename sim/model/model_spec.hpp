#pragma once
/// A transformer's architecture, read from Hugging Face style config keys.
#include <cstdint>
#include <string>

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
  int64_t experts = 0;            ///< num_local_experts (stored for later work)
  int64_t experts_per_token = 0;  ///< num_experts_per_tok (stored for later work)
};

/// Tokens the busiest expert-parallel rank receives relative to the mean, when the busiest expert gets `imbalance`
/// times the mean and the other experts of its rank the mean: 1 + (imbalance - 1) * ep / experts (a rank holding
/// every expert sees no imbalance; one expert per rank sees all of it). 1 for a model without experts.
inline double expert_rank_imbalance(const ModelSpec& m, double imbalance, int64_t ep)
{
  return m.experts > 0 ? 1.0 + (imbalance - 1.0) * double(ep) / double(m.experts) : 1.0;
}

}  // namespace dtsim::model
