#include "model/model_yaml.hpp"

#include <algorithm>
#include <filesystem>

#include "config/map_reader.hpp"
#include "config/suggest.hpp"
#include "model/model_keys.hpp"

namespace dtsim::model {

using config::MapReader;

namespace {

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

// Keys of DeepSeek configs that do not change the cost of a training step as dtsim models it: routing details
// (scoring function, bias-based balancing, scaling), the auxiliary loss, the inference-time ep_size and fp8 weight
// format, and the multi-token-prediction module, which dtsim does not model (docs/parallelism.md).
const std::vector<std::string> kIgnoredMoeKeys = {
    "aux_loss_alpha", "seq_aux", "norm_topk_prob", "routed_scaling_factor", "scoring_func", "topk_method", "ep_size",
    "quantization_config", "num_nextn_predict_layers", "auto_map", "max_window_layers", "use_sliding_window",
    "use_qk_norm", "qk_layernorm", "moe_router_dtype"};

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
    else if (const std::string hint = config::near_miss(key, keys::read_names()); !hint.empty())
      warn({m.where(key), m.path_of(key),
            "unknown key '" + key + "' (ignored, as a config.json may hold keys dtsim does not read); did you mean '" +
                hint + "'?"});
  }
}

// Reads the key under its name or its alias (older Hugging Face configs, GPT-2 and GPT-J, name the same things
// differently); given both, the alias is read.
std::optional<int64_t> read_int(MapReader& m, const config::Key& key)
{
  for (const auto& alias : key.aliases)
    if (m.has(alias)) {
      m.accept({key.name});
      return m.integer(alias, key.required(), key.int_range);
    }
  m.accept(key.aliases);
  return m.integer(key);
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
  // The routed experts under any of the names Mixtral, Qwen-MoE and DeepSeek configs use, one of them.
  std::vector<std::string> names = {keys::kRoutedExperts.name};
  names.insert(names.end(), keys::kRoutedExperts.aliases.begin(), keys::kRoutedExperts.aliases.end());
  std::string given;
  for (const auto& key : names)
    if (m.has(key)) {
      if (!given.empty())
        m.error(key, "expected one name for the routed experts, got both " + given + " and " + key);
      given = key;
      s.experts = m.integer(key, false, keys::kRoutedExperts.int_range).value_or(0);
    }
  s.experts_per_token = m.integer(keys::kExpertsPerToken).value_or(0);
  s.expert_ffn = m.integer(keys::kMoeIntermediateSize).value_or(0);
  if (auto shared = m.integer(keys::kSharedExperts))
    s.shared_ffn = *shared * (s.expert_ffn > 0 ? s.expert_ffn : s.ffn);
  if (auto width = m.integer(keys::kSharedExpertWidth)) {
    s.shared_ffn = *width;
    s.shared_expert_gate = model_type == "qwen2_moe";  // Qwen2MoeSparseMoeBlock.shared_expert_gate: h -> 1
  }
  s.dense_layers = m.integer(keys::kFirstKDenseReplace).value_or(0);
  s.expert_groups = m.integer(keys::kNGroup).value_or(0);
  s.groups_per_token = m.integer(keys::kTopkGroup).value_or(0);
  // Experts in every layer past the dense ones is what dtsim models; other layouts are refused.
  for (const config::Key* key : {&keys::kMoeLayerFreq, &keys::kDecoderSparseStep})
    if (auto every = m.integer(*key); every && *every != 1)
      m.error(key->name, "expected 1 (experts in every layer after first_k_dense_replace, the layout dtsim models), "
                         "got " + std::to_string(*every));
  if (m.has(keys::kMlpOnlyLayers.name)) {
    auto dense = m.integer_list(keys::kMlpOnlyLayers);
    if (dense && !dense->empty())
      m.error(keys::kMlpOnlyLayers.name, "expected an empty list (dense layers are modelled only as the first "
                                 "first_k_dense_replace layers), got " + std::to_string(dense->size()) + " layers");
  }
}

// Multi-head latent attention (DeepSeek-V2/V3): q_lora_rank may be null (no query latent).
void read_mla(MapReader& m, ModelSpec& s)
{
  if (!m.has(keys::kKvLoraRank.name)) {
    m.accept({keys::kQLoraRank.name, keys::kQkNopeHeadDim.name, keys::kQkRopeHeadDim.name, keys::kVHeadDim.name});
    return;
  }
  auto& a = s.mla;
  // Given, kv_lora_rank brings the three head widths (declared required) with it.
  a.kv_lora_rank = m.integer(keys::kKvLoraRank.name, true, keys::kKvLoraRank.int_range).value_or(0);
  if (m.has(keys::kQLoraRank.name) && m.file().root()[keys::kQLoraRank.name].IsNull())
    m.accept({keys::kQLoraRank.name});
  else
    a.q_lora_rank = m.integer(keys::kQLoraRank).value_or(0);
  a.qk_nope_head_dim = m.integer(keys::kQkNopeHeadDim).value_or(0);
  a.qk_rope_head_dim = m.integer(keys::kQkRopeHeadDim).value_or(0);
  a.v_head_dim = m.integer(keys::kVHeadDim).value_or(0);
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

  std::string model_type = m.string(keys::kModelType).value_or("");
  std::string act;
  const std::string& act_alias = keys::kHiddenAct.aliases.front();
  if (m.has(act_alias) && !m.has(keys::kHiddenAct.name)) {
    act = m.string(act_alias, false).value_or("");
    m.accept({keys::kHiddenAct.name});
  } else {
    act = m.string(keys::kHiddenAct).value_or("");
    m.accept({act_alias});
  }
  s.hidden = read_int(m, keys::kHiddenSize).value_or(0);
  s.layers = read_int(m, keys::kNumHiddenLayers).value_or(0);
  s.heads = read_int(m, keys::kNumAttentionHeads).value_or(0);
  s.vocab = read_int(m, keys::kVocabSize).value_or(0);
  s.max_positions = read_int(m, keys::kMaxPositionEmbeddings).value_or(0);
  // GPT-2 configs write n_inner: null for "4 * hidden".
  const config::Key& ffn_key = keys::kIntermediateSize;
  bool ffn_null = false;
  for (const std::string& name : {ffn_key.name, ffn_key.aliases.front()})
    ffn_null = ffn_null || (m.has(name) && file.root()[name].IsNull());
  auto ffn = ffn_null ? std::nullopt : read_int(m, ffn_key);
  if (ffn_null)
    m.accept({ffn_key.aliases.front(), ffn_key.name});
  s.ffn = ffn.value_or(4 * s.hidden);
  s.kv_heads = m.integer(keys::kNumKeyValueHeads).value_or(s.heads);
  auto head_dim = m.integer(keys::kHeadDim);
  s.conditioning_outputs = m.integer(keys::kConditioningOutputs).value_or(0);
  read_experts(m, s, model_type);
  read_mla(m, s);
  auto tied = m.boolean(keys::kTieWordEmbeddings);
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
