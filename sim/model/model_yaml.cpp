#include "model/model_yaml.hpp"

#include <filesystem>

#include "config/map_reader.hpp"

namespace dtsim::model {

using config::MapReader;

namespace {

// Older Hugging Face configs (GPT-2, GPT-J) name the same things differently.
const std::vector<std::pair<std::string, std::string>> kAliases = {
    {"hidden_size", "n_embd"},          {"num_hidden_layers", "n_layer"},
    {"num_attention_heads", "n_head"},  {"max_position_embeddings", "n_positions"},
    {"intermediate_size", "n_inner"},   {"hidden_act", "activation_function"}};

// Metadata that Hugging Face configs carry and that does not change the cost of a training step.
const std::vector<std::string> kIgnoredHfKeys = {
    "architectures", "torch_dtype", "transformers_version", "bos_token_id", "eos_token_id", "pad_token_id",
    "initializer_range", "layer_norm_eps", "layer_norm_epsilon", "rms_norm_eps", "use_cache", "rope_theta",
    "rope_scaling", "rotary_pct", "rotary_emb_base", "rotary_dim", "use_parallel_residual", "attention_dropout",
    "hidden_dropout", "attn_pdrop", "resid_pdrop", "embd_pdrop", "hidden_dropout_prob",
    "attention_probs_dropout_prob", "type_vocab_size", "position_embedding_type", "pretraining_tp",
    "attention_bias", "mlp_bias", "classifier_dropout", "gradient_checkpointing", "summary_type",
    "summary_use_proj", "summary_activation", "summary_proj_to_labels", "summary_first_dropout",
    "scale_attn_weights", "reorder_and_upcast_attn", "scale_attn_by_inverse_layer_idx", "task_specific_params",
    "n_ctx", "sliding_window", "router_aux_loss_coef", "output_router_logits", "router_jitter_noise"};

// Reads `key` or its alias; a model file may use either, not both.
std::optional<int64_t> read_int(MapReader& m, const std::string& key, bool required, int64_t min = 1)
{
  for (const auto& [canonical, alias] : kAliases)
    if (canonical == key && m.has(alias)) {
      m.accept({key});
      return m.integer(alias, required, min);
    }
  for (const auto& [canonical, alias] : kAliases)
    if (canonical == key)
      m.accept({alias});
  return m.integer(key, required, min);
}

}  // namespace

ModelSpec load_model(const std::string& path, Diagnostics& diag)
{
  ModelSpec s;
  s.file = path;
  s.name = std::filesystem::path(path).stem().string();
  auto file = config::YamlFile::load(path, diag);
  if (!file.ok())
    return s;
  MapReader m(file, file.root(), "", diag);
  const bool json = std::filesystem::path(path).extension() == ".json";

  std::string model_type = m.string("model_type", false).value_or("");
  std::string act;
  if (m.has("activation_function") && !m.has("hidden_act")) {
    act = m.string("activation_function", false).value_or("");
    m.accept({"hidden_act"});
  } else {
    act = m.string("hidden_act", false).value_or("");
    m.accept({"activation_function"});
  }
  s.hidden = read_int(m, "hidden_size", true).value_or(0);
  s.layers = read_int(m, "num_hidden_layers", true).value_or(0);
  s.heads = read_int(m, "num_attention_heads", true).value_or(0);
  s.vocab = read_int(m, "vocab_size", true).value_or(0);
  s.max_positions = read_int(m, "max_position_embeddings", true).value_or(0);
  // GPT-2 configs write n_inner: null for "4 * hidden".
  bool ffn_null = (m.has("n_inner") && file.root()["n_inner"].IsNull()) ||
                  (m.has("intermediate_size") && file.root()["intermediate_size"].IsNull());
  auto ffn = ffn_null ? std::nullopt : read_int(m, "intermediate_size", false);
  if (ffn_null)
    m.accept({"n_inner", "intermediate_size"});
  s.ffn = ffn.value_or(4 * s.hidden);
  s.kv_heads = m.integer("num_key_value_heads", false).value_or(s.heads);
  auto head_dim = m.integer("head_dim", false);
  s.experts = m.integer("num_local_experts", false, 0).value_or(0);
  s.experts_per_token = m.integer("num_experts_per_tok", false, 0).value_or(0);
  auto tied = m.boolean("tie_word_embeddings", false);
  m.accept(kIgnoredHfKeys);

  const bool gated = act == "silu" || act == "swiglu" || act == "swish" ||
                     model_type == "llama" || model_type == "mistral" || model_type == "mixtral" ||
                     model_type == "qwen2" || model_type == "gemma";
  const bool encoder = model_type == "bert" || model_type == "roberta";
  s.family = encoder ? Family::Encoder : gated ? Family::GatedDecoder : Family::GptDecoder;
  s.learned_positions = model_type.empty() || model_type == "gpt2" || encoder || model_type == "opt";
  // GPT-2/3 and BERT share input and output embeddings by default; llama, GPT-J and NeoX do not.
  bool tied_default = model_type.empty() || model_type == "gpt2" || encoder;
  s.tied_embeddings = tied.value_or(tied_default);

  if (!json)
    m.finish();

  if (s.heads > 0 && s.kv_heads > 0 && s.heads % s.kv_heads != 0)
    m.error("num_key_value_heads", "expected a divisor of num_attention_heads (" + std::to_string(s.heads) +
                                       "), got " + std::to_string(s.kv_heads));
  if (head_dim) {
    s.head_dim = *head_dim;
  } else if (s.heads > 0 && s.hidden > 0) {
    if (s.hidden % s.heads != 0)
      m.error("num_attention_heads", "expected a divisor of hidden_size (" + std::to_string(s.hidden) + "), got " +
                                         std::to_string(s.heads) + " (or give head_dim)");
    s.head_dim = s.hidden / s.heads;
  }
  if (s.experts > 0 && (s.experts_per_token < 1 || s.experts_per_token > s.experts))
    m.error("num_experts_per_tok", "expected between 1 and num_local_experts (" + std::to_string(s.experts) +
                                       "), got " + std::to_string(s.experts_per_token));
  return s;
}

}  // namespace dtsim::model
