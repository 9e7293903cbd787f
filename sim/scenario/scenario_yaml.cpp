#include <filesystem>

#include "config/input_file.hpp"
#include "config/map_reader.hpp"
#include "config/suggest.hpp"
#include "config/yaml_file.hpp"
#include "core/checked_math.hpp"
#include "hardware/hardware_yaml.hpp"
#include "model/model_yaml.hpp"
#include "scenario/job_segment.hpp"
#include "scenario/keys_without_effect.hpp"
#include "scenario/layer_partition.hpp"
#include "scenario/scenario_spec.hpp"
#include "scenario/scenario_keys.hpp"
#include "scenario/scenario_rules.hpp"
#include "scenario/schedule_registry.hpp"
#include "stack/stack_yaml.hpp"

namespace dtsim::scenario {

using config::Dimension;
using config::MapReader;
namespace limits = config::limits;
namespace k = keys;

const char* to_string(Recompute r)
{
  switch (r) {
    case Recompute::None: return "none";
    case Recompute::Selective: return "selective";
    case Recompute::Full: return "full";
  }
  return "?";
}

std::string describe_recompute(const TrainingSpec& t)
{
  std::string d = to_string(t.recompute);
  if (t.recompute_layers > 0)
    d += " (first " + std::to_string(t.recompute_layers) + (t.recompute_layers == 1 ? " layer" : " layers") +
         " per chunk)";
  if (t.op_checkpoint)
    d += ", memory as torchtitan's per-op checkpointing saves";
  return d;
}

const char* to_string(Fidelity f) { return f == Fidelity::Full ? "full" : "folded"; }

const char* to_string(WaferMode m)
{
  switch (m) {
    case WaferMode::Auto: return "auto";
    case WaferMode::WeightStreaming: return "weight-streaming";
    case WaferMode::LayerPipelined: return "layer-pipelined";
  }
  return "?";
}

namespace {

// The schedules that take model chunks, for messages: "interleaved-1f1b" (several joined by " or ").
std::string chunked_schedule_names()
{
  std::string names;
  for (const auto& d : schedule_registry())
    if (d.chunked)
      names += (names.empty() ? "" : " or ") + std::string(d.name);
  return names;
}

// Loads a file named by the scenario; its errors keep their own location and say where it was referenced.
template <typename Spec, typename Loader>
Spec load_referenced(const std::string& path, const Origin& from, const std::string& key, Loader load,
                     Diagnostics& diag)
{
  Diagnostics inner;
  if (std::string problem = config::input_file_problem(path); !problem.empty()) {
    // Point at the scenario line that names the file: "cannot read file 'models/x.yaml': it does not exist".
    diag.add(from, key, "cannot read file '" + path + "'" + problem.substr(problem.find(':')));
    return Spec{};
  }
  Spec spec = load(path, inner);
  for (const auto& d : inner.items())
    diag.add(d.where, d.key_path, d.message + "\n  referenced from " + from.str() + " (" + key + ")");
  return spec;
}

std::string str(int64_t v) { return std::to_string(v); }

}  // namespace

// The plan's sizes against the model: tp divides the heads, KV heads and widths, pp the layers, ep the experts.
// They need no dp, so they run where dp cannot be derived as well, and every reason a plan cannot run is told at
// once (tp 3 on Llama 3's 8 KV heads and 32 heads: both, and that dp cannot be derived).
static void check_plan_against_model(const ScenarioSpec& s, Diagnostics& diag)
{
  auto at = [&](const std::string& key) { return s.where.count(key) ? s.where.at(key) : Origin{s.file, 0, 0}; };
  const auto& m = s.model;
  const auto& p = s.parallel;
  const std::string model_ref = " of model " + m.file;
  if (m.heads % p.tp != 0)
    diag.add(at("parallel.tp"), "parallel.tp",
             "expected a divisor of num_attention_heads (" + str(m.heads) + ")" + model_ref + ", got " + str(p.tp));
  // Grouped-query attention's KV heads are a reason of their own (Megatron-Core: num_query_groups % tp == 0); with
  // as many as the heads, the heads' message says it.
  if (m.kv_heads != m.heads && m.kv_heads % p.tp != 0)
    diag.add(at("parallel.tp"), "parallel.tp",
             "expected a divisor of num_key_value_heads (" + str(m.kv_heads) + ")" + model_ref + ", got " + str(p.tp));
  if (m.hidden % p.tp != 0)
    diag.add(at("parallel.tp"), "parallel.tp",
             "expected a divisor of hidden_size (" + str(m.hidden) + ")" + model_ref + ", got " + str(p.tp));
  if (m.ffn % p.tp != 0)
    diag.add(at("parallel.tp"), "parallel.tp",
             "expected a divisor of intermediate_size (" + str(m.ffn) + ")" + model_ref + ", got " + str(p.tp));
  for (const auto& [width, key] : {std::pair{m.expert_width(), "moe_intermediate_size"},
                                   std::pair{m.shared_ffn, "the shared experts' width"}})
    if (m.experts > 0 && width > 0 && width != m.ffn && width % p.tp != 0)
      diag.add(at("parallel.tp"), "parallel.tp",
               std::string("expected a divisor of ") + key + " (" + str(width) + ")" + model_ref + ", got " +
                   str(p.tp));
  if (p.pp > m.layers) {
    diag.add(at("parallel.pp"), "parallel.pp",
             "expected at most num_hidden_layers (" + str(m.layers) + ")" + model_ref + ", got " + str(p.pp));
  } else if (!p.stage_layers.empty()) {
    int64_t sum = 0;
    for (int64_t n : p.stage_layers)
      sum += n;
    if (int64_t(p.stage_layers.size()) != p.pp * p.vpp)
      diag.add(at("parallel.stage_layers"), "parallel.stage_layers",
               "expected one entry per pipeline stage and model chunk (pp * vpp = " + str(p.pp * p.vpp) +
                   "), got " + str(int64_t(p.stage_layers.size())));
    else if (sum != m.layers)
      diag.add(at("parallel.stage_layers"), "parallel.stage_layers",
               "expected entries summing to num_hidden_layers (" + str(m.layers) + ")" + model_ref + ", got " +
                   str(sum));
    // An empty chunk holds only the embedding (the first) or only the output head and loss (the last): Llama 3's
    // balanced pipeline (Llama Team 2024, Sec. 3.3.2). A chunk between them would hold nothing.
    for (size_t i = 1; i + 1 < p.stage_layers.size(); ++i)
      if (p.stage_layers[i] == 0) {
        const std::string key = "parallel.stage_layers[" + str(int64_t(i)) + "]";
        diag.add(at("parallel.stage_layers"), key,
                 "expected at least 1 layer in a chunk that holds neither the embedding (the first) nor the "
                 "output head (the last), got 0");
      }
  } else if (m.layers % (p.pp * p.vpp) != 0)
    diag.add(at(p.vpp > 1 ? "parallel.vpp" : "parallel.pp"), p.vpp > 1 ? "parallel.vpp" : "parallel.pp",
             "expected pp * vpp to divide num_hidden_layers (" + str(m.layers) + ")" + model_ref + ", got " +
                 str(p.pp) + " * " + str(p.vpp) + " = " + str(p.pp * p.vpp));
  if (p.ep > 1 && m.experts == 0)
    diag.add(at("parallel.ep"), "parallel.ep",
             "expected 1 for a model without experts (num_local_experts" + model_ref + " is not set), got " +
                 str(p.ep));
  else if (m.experts > 0 && m.experts % p.ep != 0)
    diag.add(at("parallel.ep"), "parallel.ep",
             "expected a divisor of num_local_experts (" + str(m.experts) + ")" + model_ref + ", got " + str(p.ep));
  if (m.experts > 0 && p.tp > 1 && !p.sp)
    diag.add(at("parallel.sp"), "parallel.sp",
             "expected true for a model with experts and tp > 1 (Megatron-Core's expert dispatch needs sequence "
             "parallelism), got false");
  if (s.training.expert_imbalance != 1.0 && m.experts == 0)
    diag.add(at("training.expert_imbalance"), "training.expert_imbalance",
             "applies to models with experts only; num_local_experts" + model_ref + " is not set");
  if (s.training.expert_capacity_factor > 0 && m.experts == 0)
    diag.add(at("training.expert_capacity_factor"), "training.expert_capacity_factor",
             "applies to models with experts only; num_local_experts" + model_ref + " is not set");
  if (s.training.seq_len > m.max_positions)
    diag.add(at("training.seq_len"), "training.seq_len",
             "expected at most max_position_embeddings (" + str(m.max_positions) + ")" + model_ref + ", got " +
                 str(s.training.seq_len));
}

// The plan's other checks, which need dp (the sizes against the model are check_plan_against_model's).
static void check_plan(ScenarioSpec& s, Diagnostics& diag, bool model_ok, bool hardware_ok)
{
  auto at = [&](const std::string& key) { return s.where.count(key) ? s.where.at(key) : Origin{s.file, 0, 0}; };
  const auto& p = s.parallel;
  const std::string& precision = s.training.precision;
  const bool low = precision == "fp8" || precision == "mxfp8" || precision == "nvfp4";
  if (s.training.fp8_params && !low)
    diag.add(at("training.fp8_params"), "training.fp8_params",
             "expected false with precision " + precision +
                 ": weights held in a low precision alone need fp8, mxfp8 or nvfp4 linear layers, got true");
  if (hardware_ok && low && s.hardware.peak_flops(precision) > 0 && s.hardware.peak_flops("bf16") <= 0)
    diag.add(at("training.precision"), "training.precision",
             "expected a bf16 peak_flops entry in " + s.hardware.file + " as well: " + precision +
                 " training runs attention and the logits in bf16");
  // The block-scaled precisions need tensor cores that read block scales (Blackwell's): a device whose file gives no
  // peak for them does not run them.
  if (hardware_ok && (precision == "mxfp8" || precision == "nvfp4") && s.hardware.peak_flops(precision) <= 0) {
    // A GPU's peaks sit under `device`; another kind of system names its own section.
    const std::string key = std::string(s.hardware.system ? "" : "device.") + "peak_flops." + precision;
    const std::string device = s.hardware.system ? s.hardware.name : s.hardware.device.name;
    diag.add(at("training.precision"), "training.precision",
             "expected a device that runs " + precision + " GEMMs: " + s.hardware.file + " gives no " + key +
                 " for " + device + " (block-scaled " + precision + " tensor cores are Blackwell's and later), got '" +
                 precision + "'");
  }
  else if (hardware_ok && s.hardware.peak_flops(precision) <= 0)
    diag.add(at("training.precision"), "training.precision",
             "expected a precision with a peak_flops entry in " + s.hardware.file + ", got '" +
                 s.training.precision + "'");
  if (hardware_ok)
    scenario_rules(s).check_plan(s, at, diag);
  if (p.expert_tp != 0 && p.expert_tp != 1 && p.expert_tp != p.tp)
    diag.add(at("parallel.expert_tp"), "parallel.expert_tp",
             "expected 1 (experts whole on every rank) or tp (" + str(p.tp) + "), got " + str(p.expert_tp));
  else if (p.experts_whole() && p.ep % p.tp != 0)  // sequence parallelism is checked for every MoE plan with tp > 1
    diag.add(at("parallel.expert_tp"), "parallel.expert_tp",
             "expert_tp 1 with tp " + str(p.tp) + " needs an ep that is a multiple of tp (each expert-parallel group "
             "takes whole TP groups), got ep " + str(p.ep));
  else if (p.experts_whole() && p.expert_ranks() % p.ep != 0)
    diag.add(at("parallel.ep"), "parallel.ep",
             "expected a divisor of tp * dp * cp (" + str(p.expert_ranks()) + ") with expert_tp 1, got " + str(p.ep));
  if (p.etp() == p.tp && p.ep > 1 && p.dp_cp() % p.ep != 0)
    diag.add(at("parallel.ep"), "parallel.ep",
             (p.cp > 1 ? "expected a divisor of dp * cp (" + str(p.dp_cp()) + "): expert-parallel ranks are carved out "
                         "of the data- and context-parallel ones, got "
                       : "expected a divisor of dp (" + str(p.dp) + "): expert-parallel ranks are carved out of the "
                         "data-parallel ones, got ") + str(p.ep));
  if (p.param_gather_overlap && p.zero != 1 && p.zero != 2)
    diag.add(at("parallel.param_gather_overlap"), "parallel.param_gather_overlap",
             "applies to zero 1 and 2 (the all-gather of updated parameters after the optimizer), got zero " +
                 str(p.zero));
  if (!p.reshard_after_forward && p.zero != 3)
    diag.add(at("parallel.reshard_after_forward"), "parallel.reshard_after_forward",
             "applies to zero 3 (the weights sharded and gathered layer by layer), got zero " + str(p.zero));
  if (p.defer_gradient_sync && p.zero != 2 && p.zero != 3)
    diag.add(at("parallel.defer_gradient_sync"), "parallel.defer_gradient_sync",
             "applies to zero 2 and 3 (gradients reduce-scattered on every microbatch), got zero " + str(p.zero));
  if (p.tp_overlap && !p.sp)
    diag.add(at("parallel.tp_overlap"), "parallel.tp_overlap",
             "expected parallel.sp: true with tp_overlap (Megatron-LM overlaps the all-gathers and reduce-scatters of "
             "sequence parallelism), got sp false");
  if (p.zero > 0 && p.dp_cp() == 1)
    diag.add(at("parallel.zero"), "parallel.zero",
             "expected zero 0 with dp = 1: ZeRO shards over the data-parallel group and there is nothing to shard "
             "over, got zero " + str(p.zero));
  // Every plan size is at most the devices, but a product of several can overflow: checked.
  const auto ranks = checked_product({p.dp, p.tp, p.pp, p.cp});
  if (ranks != s.devices)
    diag.add(at("devices"), "devices",
             std::string("expected dp * tp * pp") + (p.cp > 1 ? " * cp" : "") + " = devices, got " + str(p.dp) +
                 " * " + str(p.tp) + " * " + str(p.pp) + (p.cp > 1 ? " * " + str(p.cp) : "") + " = " +
                 product_text(ranks) + " for " + str(s.devices) + " devices");
  if (p.cp > 1 && s.training.seq_len % (2 * p.cp) != 0)
    diag.add(at("parallel.cp"), "parallel.cp",
             "expected 2 * cp to divide training.seq_len (" + str(s.training.seq_len) +
                 "): Megatron-LM splits each sequence into 2 * cp chunks to balance causal attention, got cp " +
                 str(p.cp));
  if (p.cp > 1 && s.stack.context_parallel_allgather && !s.training.flash_attention)
    diag.add(at("training.flash_attention"), "training.flash_attention",
             "expected true with parallel.cp > 1 under the stack's kernels.context_parallel: torch-allgather "
             "(PyTorch's context parallelism runs only the fused SDPA kernels), got false");
  const auto& t = s.training;
  if (t.fp8_norm_amax && (t.precision != "fp8" || t.fp8_recipe != stack::Fp8Recipe::Current))
    diag.add(at("training.fp8_norm_amax"), "training.fp8_norm_amax",
             std::string("applies to precision fp8 with fp8_recipe current (the norm's amax is current "
                         "scaling's), got precision ") +
                 t.precision + (t.precision == "fp8" ? std::string(" with fp8_recipe ") + stack::to_string(t.fp8_recipe)
                                                     : std::string()));
  if (t.recompute_layers > 0 && t.recompute != Recompute::Full)
    diag.add(at("training.recompute_layers"), "training.recompute_layers",
             std::string("applies to recompute: full (the layers of each model chunk that are recomputed), got "
                         "recompute: ") + to_string(t.recompute));
  else if (t.recompute_layers > 0 && model_ok && p.pp * p.vpp > 0) {
    const int64_t most = largest_chunk_layers(s);
    if (t.recompute_layers > most)
      diag.add(at("training.recompute_layers"), "training.recompute_layers",
               "expected at most the layers of the largest model chunk (" + str(most) + "), got " +
                   str(t.recompute_layers));
  }
  if (t.op_checkpoint && t.recompute != Recompute::Full)
    diag.add(at("training.saved_activations"), "training.saved_activations",
             std::string("torchtitan-op needs recompute: full (its recomputed FLOPs: recompute_layers layers), got "
                         "recompute: ") + to_string(t.recompute));
  else if (t.op_checkpoint && model_ok && (s.model.experts > 0 || s.model.mla.enabled()))
    diag.add(at("training.saved_activations"), "training.saved_activations",
             "expected a model without experts or latent attention for torchtitan-op (its saved set is that of a "
             "dense block's seven matmuls), got " + s.model.name);
  const auto samples_per_step = checked_mul(p.dp, t.micro_batch);
  if (t.micro_batch_auto && t.global_batch % p.dp != 0) {
    // The micro batch is chosen later among the divisors of each system's batch, which must be whole.
    diag.add(at("training.global_batch"), "training.global_batch",
             "expected a multiple of dp = " + str(p.dp) + " (micro_batch: auto divides the batch of each system), "
             "got " + str(t.global_batch));
  } else if (!samples_per_step || t.global_batch % *samples_per_step != 0) {
    diag.add(at("training.global_batch"), "training.global_batch",
             "expected a multiple of dp * micro_batch = " + str(p.dp) + " * " + str(t.micro_batch) + " = " +
                 product_text(samples_per_step) + ", got " + str(t.global_batch));
  } else {
    s.microbatches = t.global_batch / *samples_per_step;
  }
  const ScheduleDef& sched = schedule_def(s.schedule);
  if (sched.chunked) {
    const std::string name = sched.name;
    const bool v_shape = sched.chunk_placement == ChunkPlacement::V;
    if (v_shape && p.vpp != 2)
      diag.add(at("parallel.vpp"), "parallel.vpp",
               "expected vpp 2 for schedule " + name + " (two model chunks per stage, placed in a V), got " +
                   str(p.vpp));
    else if (p.vpp < 2)
      diag.add(at("parallel.vpp"), "parallel.vpp",
               "expected vpp >= 2 for schedule " + name + " (model chunks per stage), got " + str(p.vpp));
    if (p.pp < 2)
      diag.add(at("parallel.pp"), "parallel.pp", "expected pp >= 2 for schedule " + name + ", got " + str(p.pp));
    // A V's order is list-scheduled for any microbatch count (schedules/zb_v.cpp).
    if (!v_shape && s.microbatches % p.pp != 0)
      diag.add(at("training.global_batch"), "training.global_batch",
               "expected the microbatch count per pipeline (global_batch / (micro_batch * dp) = " +
                   str(s.microbatches) + ") to be a multiple of pp (" + str(p.pp) + ") for schedule " + name);
  } else if (p.vpp != 1) {
    diag.add(at("parallel.vpp"), "parallel.vpp",
             "expected 1 unless schedule is " + chunked_schedule_names() + ", got " + str(p.vpp) +
                 " with schedule " + s.schedule);
  }
  // DualPipe's reference implementation asserts an even number of stages and an even count of at least 2 pp
  // microbatches (deepseek-ai/DualPipe, DualPipe.step): half go each way, and its steps need that many.
  if (sched.two_directions) {
    if (p.pp < 2 || p.pp % 2 != 0)
      diag.add(at("parallel.pp"), "parallel.pp",
               std::string("expected an even pp >= 2 for schedule ") + sched.name + ", got " + str(p.pp));
    else if (s.microbatches % 2 != 0 || s.microbatches < 2 * p.pp)
      diag.add(at("training.global_batch"), "training.global_batch",
               "expected an even microbatch count per pipeline of at least 2 pp = " + str(2 * p.pp) +
                   " for schedule " + sched.name +
                   " (half enter at each end), got global_batch / (micro_batch * dp) = " + str(s.microbatches));
  }
  if (p.ep_overlap.value_or(false) && !sched.pairs_units)
    diag.add(at("parallel.ep_overlap"), "parallel.ep_overlap",
             std::string("expected false or no ep_overlap with schedule ") + sched.name +
                 ": it runs no forward and backward as a pair (dualpipe and interleaved-1f1b do), got true");
  // Megatron-LM's blocking exchange would hold a W pass until the neighbour takes the B pass's gradient; the
  // zero-bubble implementation posts its transfers and computes meanwhile.
  if (sched.needs_async_p2p && p.pp > 1 && !p.pp_overlap)
    diag.add(at(s.where.count("parallel.pp_overlap") ? "parallel.pp_overlap" : "schedule"), "parallel.pp_overlap",
             std::string("expected true for schedule ") + sched.name +
                 " (its weight-gradient passes run while the pipeline transfers are in flight), got false");
}

// The stack's default of parallel.pp_overlap for `schedule`: its entry in overlap.pp_overlap_by_schedule, else
// overlap.pp_overlap. The entries' names are checked here, where the schedules are known.
static std::optional<bool> stack_pp_overlap(const stack::StackSpec& st, const std::string& schedule, Diagnostics& diag)
{
  std::optional<bool> chosen = st.overlap.pp_overlap;
  for (const auto& e : st.overlap.pp_overlap_by_schedule) {
    if (!find_schedule(e.schedule)) {
      diag.add(e.where, "overlap.pp_overlap_by_schedule." + e.schedule,
               "expected a schedule name (" + config::join_list(schedule_names()) + "), got '" + e.schedule + "'");
    } else if (e.schedule == schedule) {
      chosen = e.pp_overlap;
    }
  }
  return chosen;
}

void set_stack_factors(ScenarioSpec& s, const stack::Factors& f)
{
  // The communication factor scales what collectives achieve on every link (the platform and the closed-form
  // collectives both read the links' goodput); the goodputs hold the current factor.
  const double ratio = f.communication / s.stack.factors.communication;
  s.hardware.scale_up.nvlink.goodput_Bps *= ratio;
  s.hardware.network.nic.goodput_Bps *= ratio;
  s.stack.factors = f;
}

Diagnostics check_plan(ScenarioSpec& s)
{
  Diagnostics diag;
  check_plan_against_model(s, diag);
  if (s.parallel.dp > 0)
    check_plan(s, diag, true, true);
  else
    diag.add({s.file, 0, 0}, "parallel.dp", "expected a positive data-parallel size");
  return diag;
}

ScenarioSpec load_scenario(const std::string& path, const std::vector<std::string>& overrides)
{
  Diagnostics diag;
  ScenarioSpec s;
  s.file = path;
  s.name = std::filesystem::path(path).stem().string();
  auto file = config::YamlFile::load(path, diag);
  if (!file.ok())
    diag.throw_if_any();
  // "model.KEY=V" and "hardware.KEY=V" set keys of the files the scenario names (whose `model` and `hardware` are
  // paths): their loaders apply them, so that messages point at the --set as for the scenario's own keys. The same
  // for "--unset model.KEY" and "--unset hardware.KEY".
  std::vector<std::string> own_sets, model_sets, hardware_sets;
  for (const auto& o : overrides) {
    const auto unset = config::unset_key(o);
    const std::string entry = unset.value_or(o);
    auto as_given = [&](size_t skip) { return unset ? config::unset_entry(entry.substr(skip)) : entry.substr(skip); };
    if (entry.rfind("model.", 0) == 0)
      model_sets.push_back(as_given(6));
    else if (entry.rfind("hardware.", 0) == 0)
      hardware_sets.push_back(as_given(9));
    else
      own_sets.push_back(o);
  }
  file.apply_overrides(own_sets, "", diag);
  MapReader root(file, file.root(), "", diag);
  const size_t errors_before_values = diag.items().size();
  auto remember = [&](MapReader& r, const std::string& key) { s.where[r.path_of(key)] = r.where(key); };

  s.name = root.string(k::kName).value_or(s.name);
  s.description = root.string(k::kDescription).value_or("");
  auto model_path = root.string(k::kModel);
  auto hw_path = root.string(k::kHardware);
  auto stack_path = root.string(k::kStack);
  for (const config::Key* key : {&k::kModel, &k::kHardware, &k::kStack, &k::kDevices})
    remember(root, key->name);
  s.devices = int64_t(root.value(k::kDevices));

  MapReader par = root.map(k::kParallel);  // all of its keys have defaults
  s.parallel.tp = int64_t(par.value(k::kTp));
  s.parallel.pp = int64_t(par.value(k::kPp));
  s.parallel.vpp = int64_t(par.value(k::kVpp));
  auto dp = par.integer(k::kDp);
  s.parallel.sp = par.boolean(k::kSp).value_or(false);
  // The overlap switches default to the stack's choice (resolved once the stack is loaded, below).
  const auto dp_overlap = par.boolean(k::kDpOverlap), pp_overlap = par.boolean(k::kPpOverlap);
  const auto tp_overlap = par.boolean(k::kTpOverlap);
  const auto tp_async_allreduce = par.boolean(k::kTpAsyncAllreduce);
  // Transformer Engine's default num_sm of a userbuffers layer is 16, 1 under ring exchange (base.py
  // get_default_config `"num_sm": 1 if method == "ring_exchange" else 16`).
  s.parallel.ub_proj_fprop_method =
      model::ub_method_of(par.choice(k::kUbProjFpropMethod).value_or(k::kUbProjFpropMethod.default_choice));
  s.parallel.ub_fc2_fprop_method =
      model::ub_method_of(par.choice(k::kUbFc2FpropMethod).value_or(k::kUbFc2FpropMethod.default_choice));
  auto default_ub_sms = [](model::UbMethod m) { return m == model::UbMethod::RingExchange ? 1.0 : 16.0; };
  s.parallel.ub_proj_fprop_sms =
      par.number(k::kUbProjFpropSms).value_or(default_ub_sms(s.parallel.ub_proj_fprop_method));
  s.parallel.ub_fc2_fprop_sms = par.number(k::kUbFc2FpropSms).value_or(default_ub_sms(s.parallel.ub_fc2_fprop_method));
  const auto ub_proj_margin = par.boolean(k::kUbProjFpropSmMargin), ub_fc2_margin = par.boolean(k::kUbFc2FpropSmMargin);
  s.parallel.dp_bucket_bytes = par.value(k::kDpBucket);
  s.parallel.stage_layers = par.integer_list(k::kStageLayers).value_or(std::vector<int64_t>{});
  s.parallel.zero = int(par.value(k::kZero));
  s.parallel.ep = int64_t(par.value(k::kEp));
  s.parallel.moe_dispatcher =
      model::token_dispatcher_of(par.choice(k::kMoeDispatcher).value_or(k::kMoeDispatcher.default_choice));
  s.parallel.moe_preprocess_graphed = par.boolean(k::kMoePreprocessGraphed).value_or(false);
  s.parallel.expert_tp = int64_t(par.value(k::kExpertTp));  // 0: not given, tp
  const auto param_gather_overlap = par.boolean(k::kParamGatherOverlap);
  s.parallel.reshard_after_forward = par.boolean(k::kReshardAfterForward).value_or(true);
  s.parallel.defer_gradient_sync = par.boolean(k::kDeferGradientSync).value_or(false);
  s.parallel.ep_overlap = par.boolean(k::kEpOverlap);
  s.parallel.cp = int64_t(par.value(k::kCp));
  for (const config::Key* key : {&k::kTp, &k::kPp, &k::kVpp, &k::kDp, &k::kSp, &k::kZero, &k::kStageLayers,
                                 &k::kTpOverlap, &k::kEp, &k::kMoeDispatcher, &k::kMoePreprocessGraphed, &k::kCp,
                                 &k::kParamGatherOverlap, &k::kExpertTp, &k::kReshardAfterForward,
                                 &k::kDeferGradientSync, &k::kUbProjFpropSms, &k::kUbFc2FpropSms,
                                 &k::kUbProjFpropMethod, &k::kUbFc2FpropMethod})
    remember(par, key->name);
  if (par.has(k::kEpOverlap.name))  // check_plan refuses it given true where nothing pairs
    remember(par, k::kEpOverlap.name);
  par.finish();
  const bool sizes_ok = diag.items().size() == errors_before_values;
  bool dp_underivable = false;  // the sizes parsed, but devices is no multiple of their product
  if (dp) {
    s.parallel.dp = *dp;
  } else if (!sizes_ok) {
    s.parallel.dp = 0;  // derived from values that did not parse: reported already
  } else if (const auto tp_pp_cp = checked_product({s.parallel.tp, s.parallel.pp, s.parallel.cp});
             tp_pp_cp && s.devices % *tp_pp_cp == 0) {
    s.parallel.dp = s.devices / *tp_pp_cp;
  } else {
    dp_underivable = true;
    diag.add(root.where("devices"), "parallel.dp",
             "cannot derive dp: devices (" + str(s.devices) + ") is not a multiple of tp * pp" +
                 (s.parallel.cp > 1 ? " * cp" : "") + " = " + product_text(tp_pp_cp));
    s.parallel.dp = 0;
  }

  auto sched = root.choice(k::kSchedule).value_or(k::kSchedule.default_choice);
  s.schedule = find_schedule(sched) ? sched : kDefaultSchedule;  // unknown: reported
  remember(root, k::kSchedule.name);

  MapReader tr = root.map(k::kTraining);
  s.training.global_batch = int64_t(tr.value(k::kGlobalBatch));
  // micro_batch: an integer, or `auto` (also the default on wafer-scale hardware, checked once it is loaded).
  const bool micro_batch_given = tr.has(k::kMicroBatch.name);
  const bool micro_batch_auto =
      micro_batch_given && tr.string(k::kMicroBatch.name, false).value_or("") == "auto";
  if (micro_batch_given && !micro_batch_auto)
    s.training.micro_batch = tr.integer(k::kMicroBatch).value_or(1);
  s.training.seq_len = int64_t(tr.value(k::kSeqLen));
  s.training.precision = tr.choice(k::kPrecision).value_or(k::kPrecision.default_choice);
  auto rc = tr.choice(k::kRecompute).value_or(k::kRecompute.default_choice);
  s.training.recompute = rc == "none" ? Recompute::None : rc == "selective" ? Recompute::Selective : Recompute::Full;
  s.training.recompute_layers = int64_t(tr.value(k::kRecomputeLayers));
  s.training.op_checkpoint =
      tr.choice(k::kSavedActivations).value_or(k::kSavedActivations.default_choice) == "torchtitan-op";
  s.training.grad_accumulation_fusion = tr.boolean(k::kGradAccumulationFusion).value_or(true);
  s.training.expert_imbalance = tr.value(k::kExpertImbalance);
  s.training.expert_capacity_factor = tr.value(k::kExpertCapacityFactor);
  const auto flash_attention = tr.boolean(k::kFlashAttention);
  const auto fp8_recipe = tr.choice(k::kFp8Recipe);
  const auto cross_entropy = tr.choice(k::kCrossEntropy);
  const auto optimizer_state = tr.choice(k::kOptimizerState);
  s.training.fp8_params = tr.boolean(k::kFp8Params).value_or(false);
  s.training.fp8_norm_amax = tr.boolean(k::kFp8NormAmax).value_or(false);
  s.training.tokens = tr.quantity(k::kTokens).value_or(0);
  const bool tokens_given = tr.has(k::kTokens.name);
  for (const config::Key* key : {&k::kGlobalBatch, &k::kMicroBatch, &k::kSeqLen, &k::kPrecision, &k::kRecompute,
                                 &k::kRecomputeLayers, &k::kSavedActivations, &k::kExpertImbalance,
                                 &k::kExpertCapacityFactor, &k::kFlashAttention, &k::kFp8Recipe, &k::kCrossEntropy,
                                 &k::kOptimizerState, &k::kFp8Params, &k::kFp8NormAmax})
    remember(tr, key->name);
  tr.finish();

  MapReader res = root.map(k::kResilience);
  s.resilience.checkpoint_interval_s = res.quantity(k::kCheckpointInterval).value_or(0);
  s.resilience.checkpoint_async = res.choice(k::kCheckpoint).value_or(k::kCheckpoint.default_choice) == "async";
  s.resilience.checkpoint_bandwidth = res.quantity(k::kCheckpointBandwidth).value_or(0);
  s.resilience.restart_s = res.quantity(k::kRestart).value_or(0);
  s.resilience.device_mtbf_s = res.quantity(k::kDeviceMtbf).value_or(0);
  s.resilience.host_mtbf_s = res.quantity(k::kHostMtbf).value_or(0);
  if (root.has(k::kResilience.name) && !tokens_given)
    diag.add(root.where(k::kResilience.name), k::kResilience.name,
             "expected training.tokens with a resilience section: it describes a whole training run, whose length "
             "training.tokens gives (for example `tokens: 15T`)");
  res.finish();

  MapReader wafer = root.map(k::kWafer);
  auto wm = wafer.choice(k::kWaferMode).value_or(k::kWaferMode.default_choice);
  s.wafer_mode = wm == "weight-streaming"  ? WaferMode::WeightStreaming
                 : wm == "layer-pipelined" ? WaferMode::LayerPipelined
                                           : WaferMode::Auto;
  if (root.has(k::kWafer.name))
    s.where[k::kWafer.name] = root.where(k::kWafer.name);
  wafer.finish();

  MapReader var = root.map(k::kVariability);
  s.variability.device_spread = var.number(k::kDeviceSpread).value_or(0);
  s.variability.kernel_jitter = var.number(k::kKernelJitter).value_or(0);
  s.variability.samples = var.integer(k::kSamples).value_or(1);
  s.variability.seed = var.integer(k::kSeed).value_or(1);
  if (root.has(k::kVariability.name))
    s.where[k::kVariability.name] = root.where(k::kVariability.name);
  var.finish();

  MapReader place = root.map(k::kPlacement);
  const auto segment = place.integer(k::kSegment);
  const Origin segment_where = place.where(k::kSegment.name);
  place.finish();

  MapReader sim = root.map(k::kSimulation);
  auto fid = sim.choice(k::kFidelity).value_or(k::kFidelity.default_choice);
  s.fidelity = fid == "full" ? Fidelity::Full : Fidelity::Folded;
  sim.finish();
  root.finish();
  // Cross-file checks only make sense on values that parsed: a wrong value must not cause follow-on errors. A dp
  // that cannot be derived is no such value: the sizes' checks against the model run beside it.
  const bool values_ok = diag.items().size() == errors_before_values + (dp_underivable ? 1 : 0);

  size_t before = diag.items().size();
  if (model_path)
    s.model = load_referenced<model::ModelSpec>(
        file.resolve(*model_path), root.where("model"), "model",
        [&](const std::string& p, Diagnostics& d) { return model::load_model(p, d, model_sets); }, diag);
  bool model_ok = model_path && diag.items().size() == before;
  before = diag.items().size();
  if (hw_path)
    s.hardware = load_referenced<hardware::HardwareSpec>(
        file.resolve(*hw_path), root.where("hardware"), "hardware",
        [&](const std::string& p, Diagnostics& d) { return hardware::load_hardware(p, d, hardware_sets); }, diag);
  bool hardware_ok = hw_path && diag.items().size() == before;
  if (hardware_ok && segment) {
    before = diag.items().size();
    take_segment(s, *segment, segment_where, diag);
    hardware_ok = diag.items().size() == before;
  }
  // The stack: the scenario's own ("none": no stack at all), else the hardware's default. A path given with --set is
  // taken relative to the current directory (where `dtsim calibrate --out` wrote it); one written in a file, relative
  // to that file.
  before = diag.items().size();
  if (stack_path && *stack_path == "none") {
    // No stack, not even the hardware's default: the modelled physics without any correction.
  } else if (stack_path) {
    const std::string p = file.from_command_line("stack")
                              ? std::filesystem::path(*stack_path).lexically_normal().string()
                              : file.resolve(*stack_path);
    s.stack = load_referenced<stack::StackSpec>(p, root.where("stack"), "stack", stack::load_stack, diag);
  } else if (hardware_ok && !s.hardware.default_stack.empty()) {
    s.stack = load_referenced<stack::StackSpec>(s.hardware.default_stack, root.where("hardware"),
                                                "hardware (its default_stack)", stack::load_stack, diag);
  }
  if (diag.items().size() == before && s.stack.given() && hardware_ok) {
    if (const std::string why = scenario_rules(s).why_no_stack(s); !why.empty())
      diag.add(root.where("stack"), "stack", why);
  }
  if (hardware_ok)
    scenario_rules(s).take_micro_batch(
        s, {micro_batch_given, micro_batch_auto, micro_batch_given ? tr.where("micro_batch") : tr.where_self(),
            tr.valid(), tr.has(k::kRecompute.name),
            tr.has(k::kRecompute.name) ? tr.where(k::kRecompute.name) : tr.where_self()},
        diag);
  const auto& ov = s.stack.overlap;
  s.parallel.dp_overlap = dp_overlap.value_or(ov.dp_overlap.value_or(true));
  s.parallel.pp_overlap = pp_overlap.value_or(stack_pp_overlap(s.stack, s.schedule, diag).value_or(false));
  s.parallel.tp_async_allreduce = tp_async_allreduce.value_or(ov.tp_async_allreduce.value_or(true));
  s.parallel.ub_proj_fprop_sm_margin = ub_proj_margin.value_or(ov.ub_sm_margin.value_or(false));
  s.parallel.ub_fc2_fprop_sm_margin = ub_fc2_margin.value_or(ov.ub_sm_margin.value_or(false));
  // Stack defaults that need other settings apply only where those hold: TP overlap needs sequence parallelism,
  // parameter-gather overlap needs ZeRO 1 or 2.
  s.parallel.tp_overlap =
      tp_overlap.value_or(ov.tp_overlap.value_or(false) && s.parallel.sp && s.hardware.device.sm_count > 0);
  s.parallel.param_gather_overlap = param_gather_overlap.value_or(
      ov.param_gather_overlap.value_or(false) && (s.parallel.zero == 1 || s.parallel.zero == 2));
  s.training.flash_attention = flash_attention.value_or(s.stack.attention_given);
  s.training.fp8_recipe = fp8_recipe ? stack::fp8_recipe_named(*fp8_recipe) : s.stack.fp8_recipe;
  s.training.cross_entropy = cross_entropy ? stack::cross_entropy_named(*cross_entropy) : s.stack.cross_entropy;
  s.training.optimizer_state =
      optimizer_state ? stack::optimizer_state_named(*optimizer_state) : s.stack.memory.optimizer_state;
  const stack::Factors factors = s.stack.factors;
  s.stack.factors = stack::Factors{};
  set_stack_factors(s, factors);
  if (values_ok && model_ok)
    check_plan_against_model(s, diag);
  if (values_ok && s.parallel.dp > 0)
    check_plan(s, diag, model_ok, hardware_ok);
  diag.throw_if_any();
  s.warnings = keys_without_effect(file, s);
  return s;
}

}  // namespace dtsim::scenario
