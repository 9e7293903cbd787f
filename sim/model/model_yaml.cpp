#include "model/model_yaml.hpp"

#include <algorithm>
#include <filesystem>

#include "config/map_reader.hpp"
#include "config/suggest.hpp"

namespace dtsim::model {

using config::MapReader;
namespace limits = config::limits;

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

// Hugging Face model types whose architecture dtsim does not model, with what it lacks. Their config.json would
// otherwise load as a dense model of the wrong size (Qwen1.5-MoE: 1.6B parameters instead of 14.3B).
const std::vector<std::pair<std::string, std::string>> kUnmodelledTypes = {
    {"qwen2_moe", "shared experts (shared_expert_intermediate_size) and experts of moe_intermediate_size"},
    {"qwen3_moe", "experts of moe_intermediate_size (num_experts)"},
    {"deepseek_v2", "multi-head latent attention (kv_lora_rank, q_lora_rank), shared experts and dense first layers"},
    {"deepseek_v3", "multi-head latent attention (kv_lora_rank, q_lora_rank), shared experts and dense first layers"},
};

// Keys of mixture-of-experts configs that dtsim does not read: experts are read only as num_local_experts and
// num_experts_per_tok (Mixtral's keys), each expert an MLP of intermediate_size.
const std::vector<std::string> kUnreadExpertKeys = {
    "num_experts", "n_routed_experts", "n_shared_experts", "moe_intermediate_size", "shared_expert_intermediate_size",
    "num_shared_experts", "moe_num_experts", "first_k_dense_replace", "moe_layer_freq", "decoder_sparse_step"};

// The keys load_model reads, for "did you mean" on the other keys of a config.json.
const std::vector<std::string> kReadKeys = {
    "model_type", "hidden_act", "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size",
    "max_position_embeddings", "intermediate_size", "num_key_value_heads", "head_dim", "num_local_experts",
    "num_experts_per_tok", "tie_word_embeddings", "n_embd", "n_layer", "n_head", "n_positions", "n_inner",
    "activation_function"};

// A config.json may hold keys dtsim does not read; those it cannot ignore (the experts of a model type it does
// not model) are errors, and those one typo away from a key it reads are warnings.
void check_hf_keys(MapReader& m, const std::string& model_type)
{
  for (const auto& [type, missing] : kUnmodelledTypes)
    if (model_type == type)
      m.error("model_type", "expected a model type that dtsim models, got '" + type + "': dtsim does not model its " +
                                missing + "; write a YAML model file giving the experts as num_local_experts and "
                                "num_experts_per_tok (see models/qwen3-235b-a22b.yaml)");
  const auto unread = m.unread_keys();
  for (const auto& key : unread) {
    if (std::find(kUnreadExpertKeys.begin(), kUnreadExpertKeys.end(), key) != kUnreadExpertKeys.end())
      m.error(key, "a mixture-of-experts key that dtsim does not read: it models experts given as num_local_experts "
                   "and num_experts_per_tok, each an MLP of intermediate_size; without them the model would load "
                   "as a dense one");
    else if (const std::string hint = config::near_miss(key, kReadKeys); !hint.empty())
      warn({m.where(key), m.path_of(key),
            "unknown key '" + key + "' (ignored, as a config.json may hold keys dtsim does not read); did you mean '" +
                hint + "'?"});
  }
}

// Reads `key` or its alias; a model file may use either, not both.
std::optional<int64_t> read_int(MapReader& m, const std::string& key, bool required, config::IntRange range)
{
  for (const auto& [canonical, alias] : kAliases)
    if (canonical == key && m.has(alias)) {
      m.accept({key});
      return m.integer(alias, required, range);
    }
  for (const auto& [canonical, alias] : kAliases)
    if (canonical == key)
      m.accept({alias});
  return m.integer(key, required, range);
}

// A Hugging Face config.json is named by the repository it came from (`_name_or_path`: "meta-llama/Meta-Llama-3-8B"
// gives Meta-Llama-3-8B) or else by its folder; any other model file by its stem. A model named "config" says
// nothing in a report.
std::string model_name(const std::string& path, const config::YamlFile& file)
{
  namespace fs = std::filesystem;
  const YAML::Node given = file.root().IsMap() ? file.root()["_name_or_path"] : YAML::Node();
  if (given && given.IsScalar()) {
    const std::string last = fs::path(given.Scalar()).lexically_normal().filename().string();
    if (!last.empty() && last != "." && last != "..")
      return last;
  }
  const fs::path p(path);
  if (p.stem() == "config") {
    const std::string folder = fs::absolute(p).lexically_normal().parent_path().filename().string();
    if (!folder.empty())
      return folder;
  }
  return p.stem().string();
}

}  // namespace

ModelSpec load_model(const std::string& path, Diagnostics& diag, const std::vector<std::string>& sets)
{
  ModelSpec s;
  s.file = path;
  s.name = std::filesystem::path(path).stem().string();
  auto file = config::YamlFile::load(path, diag);
  if (!file.ok())
    return s;
  file.apply_overrides(sets, "model.", diag);
  MapReader m(file, file.root(), "", diag);
  const bool json = std::filesystem::path(path).extension() == ".json";
  s.name = model_name(path, file);

  std::string model_type = m.string("model_type", false).value_or("");
  std::string act;
  if (m.has("activation_function") && !m.has("hidden_act")) {
    act = m.string("activation_function", false).value_or("");
    m.accept({"hidden_act"});
  } else {
    act = m.string("hidden_act", false).value_or("");
    m.accept({"activation_function"});
  }
  s.hidden = read_int(m, "hidden_size", true, limits::kWidth).value_or(0);
  s.layers = read_int(m, "num_hidden_layers", true, limits::kLayers).value_or(0);
  s.heads = read_int(m, "num_attention_heads", true, limits::kHeads).value_or(0);
  s.vocab = read_int(m, "vocab_size", true, limits::kVocab).value_or(0);
  s.max_positions = read_int(m, "max_position_embeddings", true, limits::kPositions).value_or(0);
  // GPT-2 configs write n_inner: null for "4 * hidden".
  bool ffn_null = (m.has("n_inner") && file.root()["n_inner"].IsNull()) ||
                  (m.has("intermediate_size") && file.root()["intermediate_size"].IsNull());
  auto ffn = ffn_null ? std::nullopt : read_int(m, "intermediate_size", false, limits::kFfnWidth);
  if (ffn_null)
    m.accept({"n_inner", "intermediate_size"});
  s.ffn = ffn.value_or(4 * s.hidden);
  s.kv_heads = m.integer("num_key_value_heads", false, limits::kHeads).value_or(s.heads);
  auto head_dim = m.integer("head_dim", false, limits::kWidth);
  s.experts = m.integer("num_local_experts", false, limits::kExperts).value_or(0);
  s.experts_per_token = m.integer("num_experts_per_tok", false, limits::kExperts).value_or(0);
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

  if (json) {
    m.accept({"_name_or_path"});
    check_hf_keys(m, model_type);
    if (s.experts == 0 && s.experts_per_token > 0)
      m.error("num_experts_per_tok", "expected num_local_experts as well: dtsim reads the experts of a layer from "
                                     "num_local_experts, got num_experts_per_tok alone");
  } else {
    m.finish();
  }

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
