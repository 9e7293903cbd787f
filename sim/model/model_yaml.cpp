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
// otherwise load as a model of another architecture.
const std::vector<std::pair<std::string, std::string>> kUnmodelledTypes = {
    {"qwen3_next", "hybrid layers of gated DeltaNet linear attention and gated attention (layer_types)"},
    {"deepseek_v32", "DeepSeek sparse attention (its lightning indexer, index_topk)"},
    {"jamba", "Mamba layers interleaved with attention layers"},
};

// Keys of mixture-of-experts configs that dtsim does not read (other families' names for experts); a model carrying
// them would load without its experts.
const std::vector<std::string> kUnreadExpertKeys = {"num_shared_experts", "moe_num_experts", "moe_num_shared_experts"};

// The names of the routed expert count in the configs dtsim reads: Mixtral, Qwen-MoE, DeepSeek.
const std::vector<std::string> kExpertCountKeys = {"num_local_experts", "num_experts", "n_routed_experts"};

// Keys of DeepSeek configs that do not change the cost of a training step as dtsim models it: routing details
// (scoring function, bias-based balancing, scaling), the auxiliary loss, the inference-time ep_size and fp8 weight
// format, and the multi-token-prediction module, which dtsim does not model (docs/parallelism.md).
const std::vector<std::string> kIgnoredMoeKeys = {
    "aux_loss_alpha", "seq_aux", "norm_topk_prob", "routed_scaling_factor", "scoring_func", "topk_method", "ep_size",
    "quantization_config", "num_nextn_predict_layers", "auto_map", "max_window_layers", "use_sliding_window",
    "use_qk_norm", "qk_layernorm", "moe_router_dtype"};

// The keys load_model reads, for "did you mean" on the other keys of a config.json.
const std::vector<std::string> kReadKeys = {
    "model_type", "hidden_act", "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size",
    "max_position_embeddings", "intermediate_size", "num_key_value_heads", "head_dim", "num_local_experts",
    "num_experts_per_tok", "tie_word_embeddings", "n_embd", "n_layer", "n_head", "n_positions", "n_inner",
    "activation_function", "num_experts", "n_routed_experts", "moe_intermediate_size", "n_shared_experts",
    "shared_expert_intermediate_size", "first_k_dense_replace", "moe_layer_freq", "decoder_sparse_step",
    "mlp_only_layers", "n_group", "topk_group", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
    "qk_rope_head_dim", "v_head_dim"};

// A config.json may hold keys dtsim does not read; those it cannot ignore (the experts of a model type it does
// not model) are errors, and those one typo away from a key it reads are warnings.
void check_hf_keys(MapReader& m, const std::string& model_type)
{
  for (const auto& [type, missing] : kUnmodelledTypes)
    if (model_type == type)
      m.error("model_type", "expected a model type that dtsim models, got '" + type + "': dtsim does not model its " +
                                missing);
  const auto unread = m.unread_keys();
  for (const auto& key : unread) {
    if (std::find(kUnreadExpertKeys.begin(), kUnreadExpertKeys.end(), key) != kUnreadExpertKeys.end())
      m.error(key, "a mixture-of-experts key that dtsim does not read: it reads the routed experts as "
                   "num_local_experts, num_experts or n_routed_experts, their width as moe_intermediate_size and "
                   "shared experts as n_shared_experts or shared_expert_intermediate_size; without them the model "
                   "would load without its experts");
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

// The experts of a mixture-of-experts model under any of the names Mixtral, Qwen-MoE and DeepSeek configs use.
void read_experts(MapReader& m, ModelSpec& s, const std::string& model_type)
{
  std::string given;
  for (const auto& key : kExpertCountKeys)
    if (m.has(key)) {
      if (!given.empty())
        m.error(key, "expected one name for the routed experts, got both " + given + " and " + key);
      given = key;
      s.experts = m.integer(key, false, limits::kExperts).value_or(0);
    }
  s.experts_per_token = m.integer("num_experts_per_tok", false, limits::kExperts).value_or(0);
  s.expert_ffn = m.integer("moe_intermediate_size", false, limits::kFfnWidth).value_or(0);
  if (auto shared = m.integer("n_shared_experts", false, limits::kExperts))
    s.shared_ffn = *shared * (s.expert_ffn > 0 ? s.expert_ffn : s.ffn);
  if (auto width = m.integer("shared_expert_intermediate_size", false, limits::kFfnWidth)) {
    s.shared_ffn = *width;
    s.shared_expert_gate = model_type == "qwen2_moe";  // Qwen2MoeSparseMoeBlock.shared_expert_gate: h -> 1
  }
  s.dense_layers = m.integer("first_k_dense_replace", false, limits::kDenseLayers).value_or(0);
  s.expert_groups = m.integer("n_group", false, limits::kExperts).value_or(0);
  s.groups_per_token = m.integer("topk_group", false, limits::kExperts).value_or(0);
  // Experts in every layer past the dense ones is what dtsim models; other layouts are refused.
  for (const std::string key : {"moe_layer_freq", "decoder_sparse_step"})
    if (auto every = m.integer(key, false, limits::kLayers); every && *every != 1)
      m.error(key, "expected 1 (experts in every layer after first_k_dense_replace, the layout dtsim models), got " +
                       std::to_string(*every));
  if (m.has("mlp_only_layers")) {
    auto dense = m.integer_list("mlp_only_layers", false, limits::kDenseLayers);
    if (dense && !dense->empty())
      m.error("mlp_only_layers", "expected an empty list (dense layers are modelled only as the first "
                                 "first_k_dense_replace layers), got " + std::to_string(dense->size()) + " layers");
  }
}

// Multi-head latent attention (DeepSeek-V2/V3): q_lora_rank may be null (no query latent).
void read_mla(MapReader& m, ModelSpec& s)
{
  if (!m.has("kv_lora_rank")) {
    m.accept({"q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"});
    return;
  }
  auto& a = s.mla;
  a.kv_lora_rank = m.integer("kv_lora_rank", true, limits::kWidth).value_or(0);
  if (m.has("q_lora_rank") && m.file().root()["q_lora_rank"].IsNull())
    m.accept({"q_lora_rank"});
  else
    a.q_lora_rank = m.integer("q_lora_rank", false, limits::kLatentRank).value_or(0);
  a.qk_nope_head_dim = m.integer("qk_nope_head_dim", true, limits::kWidth).value_or(0);
  a.qk_rope_head_dim = m.integer("qk_rope_head_dim", true, limits::kWidth).value_or(0);
  a.v_head_dim = m.integer("v_head_dim", true, limits::kWidth).value_or(0);
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
  read_experts(m, s, model_type);
  read_mla(m, s);
  auto tied = m.boolean("tie_word_embeddings", false);
  m.accept(kIgnoredHfKeys);
  m.accept(kIgnoredMoeKeys);

  const bool gated = act == "silu" || act == "swiglu" || act == "swish" ||
                     model_type == "llama" || model_type == "mistral" || model_type == "mixtral" ||
                     model_type == "qwen2" || model_type == "gemma" || model_type == "qwen2_moe" ||
                     model_type == "qwen3_moe" || model_type == "deepseek_v2" || model_type == "deepseek_v3";
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
      m.error("num_experts_per_tok", "expected the routed experts as well (num_local_experts, num_experts or "
                                     "n_routed_experts), got num_experts_per_tok alone");
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
    m.error("num_experts_per_tok", "expected between 1 and the routed experts (" + std::to_string(s.experts) +
                                       "), got " + std::to_string(s.experts_per_token));
  if (s.dense_layers > 0 && s.layers > 0 && s.dense_layers >= s.layers)
    m.error("first_k_dense_replace", "expected fewer than num_hidden_layers (" + std::to_string(s.layers) +
                                         "), got " + std::to_string(s.dense_layers));
  if (s.expert_groups > 0 && s.experts > 0 && s.experts % s.expert_groups != 0)
    m.error("n_group", "expected a divisor of the routed experts (" + std::to_string(s.experts) + "), got " +
                           std::to_string(s.expert_groups));
  if (s.groups_per_token > s.expert_groups)
    m.error("topk_group", "expected at most n_group (" + std::to_string(s.expert_groups) + "), got " +
                              std::to_string(s.groups_per_token));
  return s;
}

}  // namespace dtsim::model
