#include "model/model_keys.hpp"

namespace dtsim::model::keys {

using namespace config::declaring;

const Key kModelType = Key::string("model_type", kOptional, "a GPT decoder",
                                   "llama, mistral, mixtral, qwen2, gemma, qwen2_moe, qwen3_moe, deepseek_v2, "
                                   "deepseek_v3: gated MLP; bert, roberta: encoder; gpt2 and none: learned positions, "
                                   "tied embeddings");
const Key kHiddenAct = Key::string("hidden_act", kOptional, "by model_type",
                                   "silu, swiglu or swish selects the gated three-matrix MLP")
                           .also_named({"activation_function"});
const Key kHiddenSize = Key::integer("hidden_size", limits::kWidth, kRequired, "", "h").also_named({"n_embd"});
const Key kNumHiddenLayers = Key::integer("num_hidden_layers", limits::kLayers, kRequired, "", "l")
                                 .also_named({"n_layer"});
const Key kNumAttentionHeads = Key::integer("num_attention_heads", limits::kHeads, kRequired, "", "a")
                                   .also_named({"n_head"});
const Key kVocabSize =
    Key::integer("vocab_size", limits::kVocab, kRequired, "",
                 "V; on GPU clusters the logits GEMM and cross entropy use V padded to a multiple of 128 * tp, as "
                 "Megatron-LM pads it (`_vocab_size_with_padding`, default `--make-vocab-size-divisible-by 128`); "
                 "parameter and model-FLOP counts use V");
const Key kMaxPositionEmbeddings = Key::integer("max_position_embeddings", limits::kPositions, kRequired, "",
                                                "longest sequence").also_named({"n_positions"});
const Key kIntermediateSize = Key::integer("intermediate_size", limits::kFfnWidth, kOptional,
                                           "4 * hidden (also when null)", "MLP width").also_named({"n_inner"});
const Key kNumKeyValueHeads = Key::integer("num_key_value_heads", limits::kHeads, kOptional, "the heads",
                                           "grouped-query attention; divides the heads");
const Key kHeadDim = Key::integer("head_dim", limits::kWidth, kOptional, "hidden / heads", "attention head width");
const Key kTieWordEmbeddings = Key::boolean("tie_word_embeddings", kOptional, "by model_type",
                                            "the output layer shares the input embedding");
const Key kRoutedExperts = Key::integer("num_local_experts", limits::kExperts, kOptional, "0 (dense)",
                                        "routed experts per MoE layer; one of the three names (Mixtral, Qwen-MoE, "
                                        "DeepSeek)").also_named({"num_experts", "n_routed_experts"});
const Key kExpertsPerToken = Key::integer("num_experts_per_tok", limits::kExperts, kOptional, "0",
                                          "routed experts per token, 1 to the routed experts");
const Key kMoeIntermediateSize = Key::integer("moe_intermediate_size", limits::kFfnWidth, kOptional,
                                              "`intermediate_size`",
                                              "width of one routed expert's MLP; `intermediate_size` is then the "
                                              "width of the dense MLPs");
const Key kSharedExperts = Key::integer("n_shared_experts", limits::kExperts, kOptional, "0",
                                        "DeepSeek: shared experts per MoE layer, each of `moe_intermediate_size`, run "
                                        "on every token beside the routed ones");
const Key kSharedExpertWidth = Key::integer("shared_expert_intermediate_size", limits::kFfnWidth, kOptional, "0",
                                            "Qwen2-MoE: width of the shared expert (with its h x 1 sigmoid gate)");
const Key kFirstKDenseReplace = Key::integer("first_k_dense_replace", limits::kDenseLayers, kOptional, "0",
                                             "the first layers keep a dense MLP of `intermediate_size` (fewer than "
                                             "`num_hidden_layers`)");
const Key kMoeLayerFreq = Key::integer("moe_layer_freq", limits::kLayers, kOptional, "1",
                                       "1: experts in every layer after the dense ones; other layouts are refused");
const Key kDecoderSparseStep = Key::integer("decoder_sparse_step", limits::kLayers, kOptional, "1",
                                            "the same under Qwen-MoE's name");
const Key kMlpOnlyLayers = Key::integer_list("mlp_only_layers", limits::kDenseLayers, kOptional, "[]",
                                             "an empty list: other layouts of dense layers are refused");
const Key kNGroup = Key::integer("n_group", limits::kExperts, kOptional, "0",
                                 "node-limited routing: expert groups (divides the experts). Bounds the inter-node "
                                 "all-to-all bytes (docs/parallelism.md)");
const Key kTopkGroup = Key::integer("topk_group", limits::kExperts, kOptional, "0",
                                    "node-limited routing: the groups each token picks its experts among (at most "
                                    "`n_group`)");
const Key kKvLoraRank = Key::integer("kv_lora_rank", limits::kWidth, kOptional, "none (no latent attention)",
                                     "multi-head latent attention (DeepSeek-V2/V3): with it the three head widths "
                                     "below are required");
const Key kQLoraRank = Key::integer("q_lora_rank", limits::kLatentRank, kOptional, "none",
                                    "latent attention: the query latent; null or absent: queries projected from the "
                                    "hidden state");
const Key kQkNopeHeadDim = Key::integer("qk_nope_head_dim", limits::kWidth, kRequired, "",
                                        "latent attention: per-head query/key width without rotary embedding");
const Key kQkRopeHeadDim = Key::integer("qk_rope_head_dim", limits::kWidth, kRequired, "",
                                        "latent attention: per-head query/key width with rotary embedding");
const Key kVHeadDim = Key::integer("v_head_dim", limits::kWidth, kRequired, "",
                                   "latent attention: per-head value width");

// Hidden-wide outputs of a layer's conditioning linear: up to 64 (DiT's adaLN-Zero has 6).
constexpr config::IntRange kConditioningRange{0, 64};
const Key kConditioningOutputs =
    Key::integer("adaln_conditioning_outputs", kConditioningRange, kOptional, "0 (none)",
                 "adaptive layer-norm conditioning (DiT's adaLN-Zero: 6): every layer maps one conditioning vector "
                 "per sample (width hidden) through a linear layer, with bias, to this many hidden-wide shifts, "
                 "scales and gates; it runs once per sample, not per token, and its parameters stream in with the "
                 "layer's");

const std::vector<const Key*>& all()
{
  static const std::vector<const Key*> keys = {
      &kHiddenSize,       &kNumHiddenLayers,     &kNumAttentionHeads,  &kNumKeyValueHeads,  &kHeadDim,
      &kIntermediateSize, &kVocabSize,           &kMaxPositionEmbeddings, &kModelType,      &kHiddenAct,
      &kTieWordEmbeddings, &kRoutedExperts,      &kExpertsPerToken,    &kMoeIntermediateSize, &kSharedExperts,
      &kSharedExpertWidth, &kFirstKDenseReplace, &kMoeLayerFreq,       &kDecoderSparseStep, &kMlpOnlyLayers,
      &kNGroup,           &kTopkGroup,           &kKvLoraRank,         &kQLoraRank,         &kQkNopeHeadDim,
      &kQkRopeHeadDim,    &kVHeadDim,            &kConditioningOutputs};
  return keys;
}

std::vector<std::string> read_names()
{
  std::vector<std::string> names;
  for (const Key* k : all()) {
    names.push_back(k->name);
    names.insert(names.end(), k->aliases.begin(), k->aliases.end());
  }
  return names;
}

std::vector<config::KeyGroup> groups() { return {{"", all()}}; }

}  // namespace dtsim::model::keys
