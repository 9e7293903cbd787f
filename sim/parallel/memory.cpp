#include "parallel/memory.hpp"

#include <algorithm>

#include "scenario/layer_partition.hpp"

namespace dtsim::parallel {

using scenario::Recompute;
using scenario::Schedule;

static int elem_bytes(const scenario::ScenarioSpec& s) { return s.training.precision == "fp32" ? 4 : 2; }

double layer_activation_bytes(const model::ModelSpec& m, const scenario::ScenarioSpec& s, bool selective)
{
  // Korthikanti et al. 2022, Sec. 4, generalised to any attention and MLP width: in units of s*b*h bytes for
  // 16-bit activations. GPT shapes (f = 4h, no GQA) give exactly Table 2: 10 + 24/t + 5as/(ht).
  const double t = double(s.parallel.tp), h = double(m.hidden), f = double(m.ffn);
  const double aw = double(m.heads * m.head_dim), kvw = double(m.kv_heads * m.head_dim);
  const double sq = double(s.training.seq_len);
  // Stored whole on every TP rank unless sequence parallel: both layer-norm inputs, QKV and fc1 inputs, two
  // dropout masks.
  double replicated = 10.0;
  double qkv = 2.0 * (aw + 2.0 * kvw) / h;
  double attn_out = 2.0 * aw / h;
  double mlp = (m.family == model::Family::GatedDecoder ? 6.0 : 4.0) * f / h;
  // Mixture of experts: k copies of each token (the busiest rank: times its imbalance) go through the experts,
  // and the dispatched expert inputs (2 bytes per element) are kept whole on every TP rank.
  const double routed =
      m.experts > 0
          ? double(m.experts_per_token) * model::expert_rank_imbalance(m, s.training.busiest_expert_load(), s.parallel.ep)
          : 1.0;
  mlp *= routed;
  double dispatched = m.experts > 0 ? 2.0 * routed : 0.0;
  if (s.training.precision == "fp8") {
    // Transformer Engine keeps the inputs of the linear layers for backward in fp8 (1 byte, not 2): half of the
    // QKV and fc1 inputs (replicated), of the projection input (attn_out) and of the fc2 input (2f/h of mlp).
    replicated -= 2.0;
    attn_out /= 2.0;
    mlp -= routed * f / h;
    dispatched /= 2.0;
  }
  double per_sbh = (s.parallel.sp ? replicated / t : replicated) + (qkv + attn_out + mlp) / t + dispatched;
  // softmax output (2), its dropout mask (1) and dropout output (2) per attention score element
  double scores = selective || s.training.flash_attention ? 0.0 : 5.0 * double(m.heads) * sq / (h * t);
  // Context parallel: the rank holds seq / cp tokens; its attention scores cover its queries and every key.
  double sbh = sq / double(s.parallel.cp) * double(s.training.micro_batch) * h;
  return sbh * (per_sbh + scores) * elem_bytes(s) / 2.0;
}

double stage_params(const model::Transformer& t, const scenario::ScenarioSpec& s, int64_t stage)
{
  const auto& m = t.spec();
  const int64_t tp = s.parallel.tp, pp = s.parallel.pp;
  double p = double(scenario::stage_layers(s, stage)) * t.layer_params_per_rank(tp, s.parallel.ep);
  const double h = double(m.hidden);
  if (stage == 0) {
    p += double(m.vocab) * h / double(tp);
    if (m.learned_positions)
      p += double(std::min(s.training.seq_len, m.max_positions)) * h;
  }
  if (stage == pp - 1) {
    p += t.head_params() - (m.tied_embeddings ? 0.0 : double(m.vocab) * h);  // the final norm
    // Untied models own an output matrix; tied ones keep a copy of the word embeddings on the last stage when
    // it is not also the first (Megatron-LM).
    if (!m.tied_embeddings || pp > 1)
      p += double(m.vocab) * h / double(tp);
  }
  return p;
}

double stage_expert_params(const model::Transformer& t, const scenario::ScenarioSpec& s, int64_t stage)
{
  return double(scenario::stage_layers(s, stage)) * t.layer_expert_params_per_rank(s.parallel.tp, s.parallel.ep);
}

MemoryReport estimate_memory(const scenario::ScenarioSpec& s, const model::Transformer& t)
{
  MemoryReport r;
  r.capacity_bytes = s.hardware.device.memory_bytes;
  const auto& m = t.spec();
  const int64_t pp = s.parallel.pp, v = s.parallel.vpp, mb = s.microbatches;
  const int e = elem_bytes(s);
  const double sbh =
      double(s.training.seq_len / s.parallel.cp) * double(s.training.micro_batch) * double(m.hidden);
  const bool full = s.training.recompute == Recompute::Full;
  const double per_layer = layer_activation_bytes(m, s, s.training.recompute == Recompute::Selective);
  // A layer recomputed in full keeps only its input (sharded under sequence parallelism); while it is recomputed
  // during its backward pass, its whole activations are there once more. The other layers keep everything.
  const double recomputed = 2.0 * sbh * (s.parallel.sp ? 1.0 / double(s.parallel.tp) : 1.0) * e / 2.0;
  const double working = full ? layer_activation_bytes(m, s, false) : 0.0;
  for (int64_t st = 0; st < pp; ++st) {
    StageMemory sm;
    sm.stage = st;
    sm.params = stage_params(t, s, st);
    const double weight_bytes = s.training.precision == "fp32" ? 4 : 2;
    // ZeRO (Rajbhandari et al. 2019, Sec. 5): stage 1 shards the optimizer states over the dp ranks, stage 2
    // also the gradients, stage 3 also the weights; stage 3 then holds the gathered weights of the layer being
    // computed and of the one being prefetched.
    // Expert parameters are sharded over their own data-parallel group (dp / ep ranks).
    const int zero = s.parallel.zero;
    const double d = double(s.parallel.dp_cp()), de = double(s.parallel.dp_cp() / s.parallel.ep);
    const double experts = stage_expert_params(t, s, st), dense = sm.params - experts;
    auto sharded = [&](int from_stage) { return zero >= from_stage ? dense / d + experts / de : sm.params; };
    sm.weights_bytes = sharded(3) * weight_bytes;
    if (s.training.precision == "fp8")  // Transformer Engine's fp8 copy of the weights, kept across microbatches
      sm.weights_bytes += sharded(3);
    if (zero >= 3)
      sm.weights_bytes += 2.0 * t.layer_params_per_rank(s.parallel.tp, s.parallel.ep) * weight_bytes;
    sm.gradients_bytes = sharded(2) * weight_bytes;
    // (fp32 master,) momentum, variance
    sm.optimizer_bytes = sharded(1) * (s.training.precision == "fp32" ? 8 : 12);
    int64_t in_flight = 0;
    switch (s.schedule) {
      case Schedule::GPipe: in_flight = mb * v; break;
      case Schedule::OneFOneB: in_flight = std::min(pp - st, mb); break;
      case Schedule::Interleaved: in_flight = std::min((pp - st - 1) * 2 + (v - 1) * pp + 1, mb * v); break;
    }
    sm.microbatches_in_flight = in_flight;
    // Uneven stages (parallel.stage_layers): the stage's mean layers per chunk, of which the mean recomputed.
    const double layers_per_chunk = double(scenario::stage_layers(s, st)) / double(v);
    const double recomputed_per_chunk = double(scenario::stage_recomputed_layers(s, st)) / double(v);
    const double per_chunk = recomputed_per_chunk * recomputed + (layers_per_chunk - recomputed_per_chunk) * per_layer;
    sm.activations_bytes = double(in_flight) * per_chunk + working;
    if (st == pp - 1)  // logits of the microbatch whose loss is being computed: 16-bit plus two fp32 copies
      sm.activations_bytes +=
          double(s.training.seq_len / s.parallel.cp * s.training.micro_batch) * double(m.vocab) /
          double(s.parallel.tp) * (e + 8);
    r.stages.push_back(sm);
  }
  for (size_t i = 0; i < r.stages.size(); ++i)
    if (r.stages[i].total_bytes() > r.stages[size_t(r.peak_stage)].total_bytes())
      r.peak_stage = int64_t(i);
  return r;
}

}  // namespace dtsim::parallel
