#include "replay/step_program.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "parallel/memory.hpp"
#include "replay/moe_host_sync.hpp"
#include "scenario/layer_partition.hpp"
#include "scenario/moe_dispatch_wait.hpp"

namespace dtsim::replay {

using scenario::Recompute;

namespace {

Step compute_step(const std::vector<model::Op>& ops, const kernels::ComputeModel& cm, std::string label,
                  bool recompute)
{
  Step st;
  st.kind = Step::Kind::Compute;
  st.recompute = recompute;
  st.label = std::move(label);
  st.seconds = cm.run_seconds(ops);
  double sum = 0, squares = 0;
  for (const auto& op : ops) {
    st.flops += op.flops();
    const double t = cm.seconds(op);
    sum += t;
    squares += t * t;
  }
  st.jitter_weight = sum > 0 ? std::sqrt(squares) / sum : 1.0;
  return st;
}

// The steps of a pass program's segments, each kernel run timed once per program built: a model's layers share one
// model::PassProgram (every expert layer of DeepSeek-V3 the same ops), and timing its kernels again for each layer
// was about 40 % of the CPU of a search's lower bounds (perf, DeepSeek-V3's full space; docs/performance.md). Keyed
// by the address of the segments (or ops) they were made from, which build_step_program keeps unchanged while it
// runs; the steps carry no label (labelled() adds it). The same calls on the same ops give the same doubles.
class TimedPasses {
 public:
  TimedPasses(const kernels::ComputeModel& cm, bool labels) : cm_(cm), labels_(labels) {}

  /// Whether the program's steps get their labels (StepLabels).
  bool labels() const { return labels_; }

  /// Every segment of `segs` in its order: compute steps and collectives.
  const std::vector<Step>& whole(const std::vector<model::Segment>& segs)
  {
    auto [it, added] = memo_.try_emplace({&segs, Part::Whole});
    if (added)
      for (size_t i = 0; i < segs.size(); ++i)
        it->second.push_back(segs[i].is_collective() ? collective_step(segs, i, cm_)
                                                     : compute_step(segs[i].ops, cm_, "", false));
    return it->second;
  }
  /// A split backward's input part (B): each segment less its weight-gradient kernels, segments left empty dropped.
  const std::vector<Step>& input(const std::vector<model::Segment>& segs)
  {
    auto [it, added] = memo_.try_emplace({&segs, Part::Input});
    if (added)
      for (const auto& seg : segs) {
        if (seg.is_collective()) {
          it->second.push_back(collective_step(segs, size_t(&seg - segs.data()), cm_));
          continue;
        }
        std::vector<model::Op> inputs;
        for (const auto& op : seg.ops)
          if (!op.weight_gradient)
            inputs.push_back(op);
        if (!inputs.empty())
          it->second.push_back(compute_step(inputs, cm_, "", false));
      }
    return it->second;
  }
  /// Its weight part (W): every weight-gradient kernel of `segs` as one compute step (none if there are none).
  const std::vector<Step>& weight(const std::vector<model::Segment>& segs)
  {
    auto [it, added] = memo_.try_emplace({&segs, Part::Weight});
    if (added) {
      std::vector<model::Op> weights;
      for (const auto& seg : segs)
        for (const auto& op : seg.ops)
          if (op.weight_gradient)
            weights.push_back(op);
      if (!weights.empty())
        it->second.push_back(compute_step(weights, cm_, "", false));
    }
    return it->second;
  }
  /// `ops` as one compute step.
  const Step& run(const std::vector<model::Op>& ops)
  {
    auto [it, added] = memo_.try_emplace({&ops, Part::Run});
    if (added)
      it->second.push_back(compute_step(ops, cm_, "", false));
    return it->second.front();
  }

 private:
  enum class Part { Whole, Input, Weight, Run };
  // Segment `i` of `segs`, a collective. A userbuffers reduce-scatter carries the time of the GEMM before it, whose
  // SMs it takes for that GEMM's whole length under set_sm_margin and whose last chunk hides a ring exchange's last
  // send.
  static Step collective_step(const std::vector<model::Segment>& segs, size_t i, const kernels::ComputeModel& cm)
  {
    const model::Segment& seg = segs[i];
    Step st;
    const bool ring = seg.collective == model::TpCollective::ContextGather ||
                      seg.collective == model::TpCollective::ContextGatherReduce;
    st.kind = seg.collective == model::TpCollective::AllToAll ? Step::Kind::EpCollective
              : ring                                          ? Step::Kind::CpRing
                                                              : Step::Kind::TpCollective;
    st.collective = seg.collective;
    st.bytes = seg.collective_bytes;
    st.beside_next = seg.beside_next;
    st.blocking = seg.blocking;
    st.copy_engine = seg.copy_engine;
    st.ub = seg.ub;
    if (seg.ub.chunks > 0 && i > 0 && !segs[i - 1].is_collective())
      st.ub_gemm_s = cm.seconds(segs[i - 1].ops.back());
    return st;
  }
  const kernels::ComputeModel& cm_;
  const bool labels_;
  std::map<std::pair<const void*, Part>, std::vector<Step>> memo_;
};

// `steps` (from TimedPasses) appended to `out` with their label (if `labels`): a compute step's is `label`, a
// collective's `label` and the collective's name; `recompute` marks the compute steps.
void append_labelled(std::vector<Step>& out, const std::vector<Step>& steps, const std::string& label, bool recompute,
                     bool labels)
{
  for (const Step& timed : steps) {
    out.push_back(timed);
    Step& st = out.back();
    if (st.kind == Step::Kind::Compute)
      st.recompute = recompute;
    if (!labels)
      continue;
    st.label = st.kind == Step::Kind::Compute ? label : label + " " + model::to_string(st.collective);
  }
}

void append(std::vector<Step>& out, const std::vector<model::Segment>& segs, TimedPasses& timed,
            const std::string& label, bool recompute)
{
  append_labelled(out, timed.whole(segs), label, recompute, timed.labels());
}

// A parameter group's gradients are ready. Without gradient-accumulation fusion, PyTorch's AccumulateGrad adds
// each new gradient into the stored one (read both, write one) on every microbatch but the first.
void grad_ready(std::vector<Step>& out, ChunkGradients& grads, double bytes, const kernels::ComputeModel& cm,
                bool fused, bool labels, bool expert = false)
{
  if (bytes <= 0)
    return;
  if (!fused) {
    Step acc;
    acc.kind = Step::Kind::Compute;
    acc.seconds = cm.memory_seconds(3 * bytes);
    if (labels)
      acc.label = "gradient accumulation";
    acc.accumulation = true;
    out.push_back(std::move(acc));
  }
  Step st;
  st.kind = Step::Kind::GradReady;
  st.grad_index = int(grads.bytes.size());
  grads.bytes.push_back(bytes);
  grads.expert.push_back(expert);
  out.push_back(std::move(st));
}

// ZeRO-3: the parameters of the coming kernels (one layer, the embedding or the head) are gathered first; a layer's
// experts, sharded over their own data-parallel group, in a gather of their own (none when that group is one rank).
void param_gather(std::vector<Step>& out, double params, double elem, int zero, const std::string& label, bool labels,
                  bool expert = false)
{
  if (zero < 3 || params <= 0)
    return;
  Step st;
  st.kind = Step::Kind::ParamGather;
  st.bytes = params * elem;
  st.expert = expert;
  if (labels)
    st.label = std::string(expert ? "expert parameter all-gather " : "parameter all-gather ") + label;
  out.push_back(std::move(st));
}

// Builds a chunk's backward steps whole and, under a zero-bubble schedule, as its input part (B) and weight part
// (W) too: the weight-gradient GEMMs of each pass go to W as one compute step, with the gradient accumulation and
// the gradients' ready points; everything else stays in B in its order.
struct BackwardBuilder {
  std::vector<Step>& whole;
  std::vector<Step>* input = nullptr;   ///< null unless the schedule splits the backward
  std::vector<Step>* weight = nullptr;
  TimedPasses& timed;

  bool split() const { return input != nullptr; }
  // Steps that `add` appends to the whole backward, copied to B (`to_weight` false) or W.
  template <class Add>
  void mirror(bool to_weight, Add add)
  {
    const size_t before = whole.size();
    add(whole);
    if (split()) {
      std::vector<Step>& part = to_weight ? *weight : *input;
      part.insert(part.end(), whole.begin() + long(before), whole.end());
    }
  }
  void pass(const std::vector<model::Segment>& segs, const std::string& label)
  {
    append(whole, segs, timed, label, false);
    if (!split())
      return;
    append_labelled(*input, timed.input(segs), label, false, timed.labels());
    append_labelled(*weight, timed.weight(segs), timed.labels() ? "weight gradients " + label : std::string(), false,
                    timed.labels());
  }
};

}  // namespace

const std::vector<Step>& unit_steps(const StepProgram& p, int64_t stage, int64_t chunk, int64_t microbatch,
                                    bool backward, scenario::BackwardPart part)
{
  // A hand-made program may leave backward_first empty: the first microbatch then runs the common backward.
  const bool first = microbatch == 0 && !p.backward_first.empty();
  if (!backward)
    return (microbatch == 0 && !p.forward_first.empty() ? p.forward_first : p.forward)[size_t(stage)][size_t(chunk)];
  if (part == scenario::BackwardPart::Input)
    return p.backward_input.at(size_t(stage))[size_t(chunk)];
  if (part == scenario::BackwardPart::Weight) {
    const bool first_w = microbatch == 0 && !p.backward_weight_first.empty();
    return (first_w ? p.backward_weight_first : p.backward_weight).at(size_t(stage))[size_t(chunk)];
  }
  const auto& table = first ? p.backward_first : p.backward;
  return table[size_t(stage)][size_t(chunk)];
}

StepProgram build_step_program(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan,
                               const model::Transformer& t, const kernels::ComputeModel& cm, StepLabels step_labels)
{
  const bool labels = step_labels == StepLabels::Made;
  // A label's text, made only where labels are (a search's lower bounds build thousands of programs without).
  auto label_of = [labels](auto make) { return labels ? std::string(make()) : std::string(); };
  const auto& m = t.spec();
  const auto& g = plan.groups;
  const int64_t p = g.pp, v = g.vpp, tp = g.tp;
  const int elem = plan.precision.weight_bytes;  // parameters gathered and sent, 16-bit unless fp32
  // The transformer layers' parameters gathered over dp: with per-tensor fp8 weights (training.fp8_params) one byte
  // each. Megatron-Core puts Float8Tensor parameters in a uint8 parameter buffer and gathers that
  // (distributed_data_parallel.py: param_dtype torch.uint8 for fp8 parameters; core_v0.15.0 to 0.17), so the
  // distributed optimizer's all-gather moves the fp8 bytes. MXFP8 weights are gathered in 16-bit: Megatron-Core
  // requires reuse_grad_buf_for_mxfp8_param_ag with them, the main weights are copied to a bf16 view of the
  // gradient buffer, gathered, and cast to MXFP8 as they are copied into the parameters
  // (distrib_optimizer.py _copy_main_params_to_param_buffer; distributed_data_parallel.py start_param_sync).
  // The embedding, the output layer and the norms are not fp8 parameters and stay 16-bit (the norms, 2h of about
  // 12h^2 parameters of a layer, are counted here with the layer). NVFP4 weights (Megatron-Core's fp4_param, set by
  // Megatron-Bridge's bf16_with_nvfp4_mixed from v0.4.2, the 26.04.01 release) are gathered as their packed
  // row-wise data, half a byte each (parallel::gathered_layer_weight_bytes).
  const double layer_elem = parallel::gathered_layer_weight_bytes(plan.precision, s.training.fp8_params);
  const model::PassProgram layer = t.layer(plan.shape), emb = t.embedding(plan.shape), head = t.head(plan.shape);
  const double grad_elem = plan.precision.gradient_bytes;
  const double h = double(m.hidden);
  // A layer's parameters on one rank: its experts are reduced (and under ZeRO sharded and gathered) over their own
  // data-parallel group, the rest over dp. Experts that one rank alone holds (dp = ep) have nothing to gather.
  const double layer_experts = t.layer_expert_params_per_rank(g.expert_tp, g.ep);
  const double layer_dense = t.layer_params_per_rank(tp, g.ep, false, g.expert_tp) - layer_experts;
  const double gathered_experts = g.expert_dp > 1 ? layer_experts : 0.0;
  // The dense first layers of a model with experts (first_k_dense_replace): their own program and parameters.
  const bool dense_first = t.moe() && m.dense_layers > 0;
  const model::PassProgram dense_layer = dense_first ? t.layer(plan.shape, true) : model::PassProgram{};
  const double dense_layer_params = dense_first ? t.layer_params_per_rank(tp, g.ep, true, g.expert_tp) : 0.0;
  struct LayerUnit {
    const model::PassProgram& program;
    double dense, experts, gathered;  // parameters per rank: non-expert, expert, expert gathered under ZeRO-3
  };
  auto unit_of = [&](int64_t l) {
    return t.dense_layer(l) ? LayerUnit{dense_layer, dense_layer_params, 0.0, 0.0}
                            : LayerUnit{layer, layer_dense, layer_experts, gathered_experts};
  };
  double head_params = t.head_params() - (m.tied_embeddings ? 0.0 : double(m.vocab) * h);
  // Tied embeddings on another stage than the output layer: that stage keeps a copy (Megatron-LM), kept in step
  // by an all-reduce of the two copies' gradients below; in a V the first stage holds both, one matrix.
  const bool embedding_copy = m.tied_embeddings && p > 1 && !plan.head_beside_embedding();
  if (!m.tied_embeddings || embedding_copy)
    head_params += double(m.vocab) * h / double(tp);
  const double emb_params = double(m.vocab) * h / double(tp) +
                            (m.learned_positions ? double(std::min(plan.shape.seq, m.max_positions)) * h : 0.0);
  const bool fused = s.training.grad_accumulation_fusion;
  const int zero = plan.comm.zero;
  // Backward gathers: ZeRO-3 gathers again what it resharded after the forward; without resharding nothing.
  const int bw_zero = plan.comm.reshard_after_forward ? zero : 0;

  // Every dispatcher Megatron-Core runs (alltoall, DeepEP, HybridEP) waits on the host for its token counts once
  // per MoE layer forward (recomputed ones included), where scenario/moe_dispatch_wait.hpp says it is priced
  // (replay/moe_host_sync.hpp).
  const double moe_sync = scenario::moe_dispatch_wait(s) == scenario::MoeDispatchWait::Priced
                              ? moe_dispatch_sync_seconds(layer.forward, cm, s.parallel.moe_dispatcher,
                                                          s.parallel.moe_preprocess_graphed)
                              : 0.0;

  TimedPasses timed(cm, labels);
  // A layer's forward, or its recomputation, with that wait before its first expert all-to-all.
  auto append_layer_forward = [&](std::vector<Step>& out, int64_t index, const std::vector<model::Segment>& forward,
                                  const std::string& label, bool recompute) {
    const size_t start = out.size();
    append(out, forward, timed, label, recompute);
    if (!t.dense_layer(index))
      insert_moe_dispatch_sync(
          out, start, moe_sync,
          label_of([&] { return "host waits for the MoE dispatch splits, layer " + std::to_string(index); }),
          recompute);
  };
  StepProgram prog;
  prog.forward.assign(size_t(p), std::vector<std::vector<Step>>(size_t(v)));
  prog.backward.assign(size_t(p), std::vector<std::vector<Step>>(size_t(v)));
  prog.gradients.assign(size_t(p), std::vector<ChunkGradients>(size_t(v)));
  const bool split = plan.schedule->splits_backward;
  if (split) {
    prog.backward_input.assign(size_t(p), std::vector<std::vector<Step>>(size_t(v)));
    prog.backward_weight.assign(size_t(p), std::vector<std::vector<Step>>(size_t(v)));
  }
  for (int64_t st = 0; st < p; ++st) {
    double stage_layer_dense = 0;  // the stage's transformer-layer parameters outside the experts, per rank
    for (int64_t c = 0; c < v; ++c) {
      const int64_t vs = plan.partition_index(st, c);
      const bool first = vs == 0, last = vs == int64_t(plan.chunk_layers.size()) - 1;
      const int64_t layer0 = plan.chunk_first_layer[size_t(vs)], per_chunk = plan.chunk_layers[size_t(vs)];
      auto& fw = prog.forward[size_t(st)][size_t(c)];
      auto& bw = prog.backward[size_t(st)][size_t(c)];
      auto& grads = prog.gradients[size_t(st)][size_t(c)];
      if (cm.microbatch_host_seconds() > 0) {  // the stack's host time per microbatch, before each forward unit
        fw.push_back(compute_step({}, cm, label_of([] { return "host, per microbatch"; }), false));
        fw.back().seconds = cm.microbatch_host_seconds();
      }
      // Forward gathers: ZeRO-3 on every microbatch; with param_gather_overlap, ZeRO 1/2 on the first one only
      // (forward_first keeps them, forward drops them below).
      const int fw_zero = plan.comm.param_gather_overlap ? 3 : zero;
      if (first) {
        param_gather(fw, emb_params, elem, fw_zero, "embedding", labels);
        append(fw, emb.forward, timed, "forward embedding", false);
      }
      for (int64_t l = 0; l < per_chunk; ++l) {
        const LayerUnit u = unit_of(layer0 + l);
        stage_layer_dense += u.dense;
        const std::string name = label_of([&] { return "layer " + std::to_string(layer0 + l); });
        param_gather(fw, u.dense, layer_elem, fw_zero, name, labels);
        param_gather(fw, u.gathered, layer_elem, fw_zero, name, labels, true);
        append_layer_forward(fw, layer0 + l, u.program.forward, label_of([&] { return "forward " + name; }), false);
      }
      if (last) {
        param_gather(fw, head_params, elem, fw_zero, "head", labels);
        append(fw, head.forward, timed, "forward head", false);
      }
      BackwardBuilder back{bw, split ? &prog.backward_input[size_t(st)][size_t(c)] : nullptr,
                           split ? &prog.backward_weight[size_t(st)][size_t(c)] : nullptr, timed};
      if (last) {
        back.mirror(false,
                    [&](std::vector<Step>& out) { param_gather(out, head_params, elem, bw_zero, "head", labels); });
        back.pass(head.backward, "backward head");
        back.mirror(true, [&](std::vector<Step>& out) {
          grad_ready(out, grads, head_params * grad_elem, cm, fused, labels);
        });
      }
      for (int64_t l = per_chunk - 1; l >= 0; --l) {
        const std::string name = label_of([&] { return "layer " + std::to_string(layer0 + l); });
        const LayerUnit u = unit_of(layer0 + l);
        back.mirror(false, [&](std::vector<Step>& out) {
          param_gather(out, u.dense, layer_elem, bw_zero, name, labels);
          param_gather(out, u.gathered, layer_elem, bw_zero, name, labels, true);
          if (l < plan.chunk_recomputed_layers[size_t(vs)])  // Megatron-LM's block method: the chunk's first layers
            append_layer_forward(out, layer0 + l, u.program.forward, label_of([&] { return "recompute " + name; }),
                                 true);
          else if (s.training.recompute == Recompute::Selective && !u.program.selective_recompute.empty()) {
            // under fused attention selective recomputation re-runs nothing (model/transformer.cpp): no empty kernel,
            // so that its step program is `none`'s, as the search's replay key assumes (app/search_replay_key.cpp)
            out.push_back(timed.run(u.program.selective_recompute));
            out.back().label = label_of([&] { return "recompute attention " + name; });
            out.back().recompute = true;
          }
        });
        back.pass(u.program.backward, label_of([&] { return "backward " + name; }));
        back.mirror(true, [&](std::vector<Step>& out) {
          grad_ready(out, grads, u.experts * grad_elem, cm, fused, labels, true);
          grad_ready(out, grads, u.dense * grad_elem, cm, fused, labels);
        });
      }
      if (first) {
        back.mirror(false,
                    [&](std::vector<Step>& out) { param_gather(out, emb_params, elem, bw_zero, "embedding", labels); });
        back.pass(emb.backward, "backward embedding");
        back.mirror(true,
                    [&](std::vector<Step>& out) { grad_ready(out, grads, emb_params * grad_elem, cm, fused, labels); });
      }
    }
    if (plan.comm.param_gather_overlap) {
      prog.forward_first.push_back(prog.forward[size_t(st)]);
      for (auto& chunk : prog.forward[size_t(st)])
        chunk.erase(std::remove_if(chunk.begin(), chunk.end(),
                                   [](const Step& x) { return x.kind == Step::Kind::ParamGather; }),
                    chunk.end());
    }
    auto without_accumulation = [](std::vector<std::vector<Step>> chunks) {
      for (auto& chunk : chunks)
        chunk.erase(std::remove_if(chunk.begin(), chunk.end(), [](const Step& x) { return x.accumulation; }),
                    chunk.end());
      return chunks;
    };
    prog.backward_first.push_back(without_accumulation(prog.backward[size_t(st)]));
    if (split)
      prog.backward_weight_first.push_back(without_accumulation(prog.backward_weight[size_t(st)]));
    prog.stage_params.push_back(parallel::stage_params(t, plan, st));
    // ZeRO 1-3: each rank updates only its 1/dp share of the stage's parameters, then (stages 1 and 2) the
    // updated 16-bit parameters are all-gathered; stage 3 keeps them sharded and gathers them before use.
    const double experts = parallel::stage_expert_params(t, plan, st), dense = prog.stage_params.back() - experts;
    const double updated =
        zero >= 1 ? dense / double(g.dense_dp) + experts / double(g.expert_dp) : dense + experts;
    const double step_bytes = s.stack.optimizer_step_bytes > 0 ? s.stack.optimizer_step_bytes : kOptimizerBytesPerParam;
    prog.optimizer_seconds.push_back(cm.memory_seconds(step_bytes * updated));
    const bool refresh = (zero == 1 || zero == 2) && !plan.comm.param_gather_overlap;
    prog.param_allgather_bytes.push_back(
        refresh ? (dense - stage_layer_dense) * elem + stage_layer_dense * layer_elem : 0.0);
    prog.expert_allgather_bytes.push_back(refresh ? experts * layer_elem : 0.0);
  }
  if (embedding_copy)
    prog.embedding_sync_bytes = double(m.vocab) * h / double(tp) * grad_elem;
  // Megatron-LM's scatter/gather: each tensor-parallel rank sends 1/t of the activations to the next stage
  // (sequence parallelism shards them the same way).
  prog.send_bytes = double(plan.tokens_per_rank) * h * plan.precision.activation_bytes / double(tp);

  const double tokens = double(plan.tokens_per_microbatch), seq = double(plan.shape.seq);
  const double attn_width = double(m.heads * m.head_dim);
  // Scores and attention over values: 2 * T * s * width each (MLA: the query-key and value widths differ).
  const double scores_width = m.mla.enabled() ? double(m.qk_width()) : attn_width;
  const double core_width = m.mla.enabled() ? double(m.qk_width() + m.v_width()) : 2.0 * attn_width;
  prog.model_flops = plan.model_flops_per_step;
  double recompute = 0;
  if (s.training.recompute == Recompute::Full) {
    int64_t layers = 0;
    for (int64_t n : plan.chunk_recomputed_layers)
      layers += n;
    recompute = double(layers) * plan.layer_forward_flops;
    if (dense_first)  // the recomputed dense first layers: their own FLOPs in place of a MoE layer's
      for (size_t vs = 0; vs < plan.chunk_layers.size(); ++vs)
        for (int64_t l = 0; l < plan.chunk_recomputed_layers[vs]; ++l)
          if (t.dense_layer(plan.chunk_first_layer[vs] + l))
            recompute += plan.dense_layer_forward_flops - plan.layer_forward_flops;
  }
  else if (s.training.recompute == Recompute::Selective && !plan.shape.flash)
    recompute = m.mla.enabled() ? double(m.layers) * 2.0 * tokens * seq * core_width
                                : double(m.layers) * 4.0 * tokens * seq * attn_width;
  if (plan.shape.flash)  // the fused backward recomputes the scores: one GEMM of 2 * T * s * width
    recompute += double(m.layers) * 2.0 * tokens * seq * scores_width;
  prog.hardware_flops = prog.model_flops + recompute * plan.microbatches_per_step;
  return prog;
}

scenario::PassTimes pass_times(const StepProgram& p)
{
  scenario::PassTimes times;
  if (p.backward_input.empty())
    return times;
  auto seconds = [](const std::vector<std::vector<std::vector<Step>>>& table) {
    std::vector<std::vector<double>> out;
    for (const auto& stage : table) {
      out.emplace_back();
      for (const auto& chunk : stage) {
        double sum = 0;
        for (const Step& x : chunk)
          sum += x.kind == Step::Kind::Compute ? x.seconds : 0.0;
        out.back().push_back(sum);
      }
    }
    return out;
  };
  times.forward_s = seconds(p.forward);
  times.input_s = seconds(p.backward_input);
  times.weight_s = seconds(p.backward_weight);
  return times;
}

}  // namespace dtsim::replay
