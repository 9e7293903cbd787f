#include "model/transformer.hpp"

#include <algorithm>
#include <optional>

#include "model/micro_pipeline_tp.hpp"
#include "model/mla.hpp"

namespace dtsim::model {

const char* to_string(TpCollective c)
{
  switch (c) {
    case TpCollective::None: return "none";
    case TpCollective::AllReduce: return "all-reduce";
    case TpCollective::ReduceScatter: return "reduce-scatter";
    case TpCollective::AllGather: return "all-gather";
    case TpCollective::AllToAll: return "expert all-to-all";
    case TpCollective::ContextGather: return "context ring (K, V)";
    case TpCollective::ContextGatherReduce: return "context ring (K, V, dK, dV)";
  }
  return "?";
}

void append_kernels(std::vector<Segment>& pass, std::vector<Op> ops)
{
  if (ops.empty())
    return;
  const bool closed = pass.size() >= 2 && pass[pass.size() - 2].beside_next;
  if (!pass.empty() && !pass.back().is_collective() && !closed)
    pass.back().ops.insert(pass.back().ops.end(), ops.begin(), ops.end());
  else
    pass.push_back(Segment{std::move(ops), TpCollective::None, 0});
}

void append_beside(std::vector<Segment>& pass, TpCollective c, double bytes, std::vector<Op> kernels, bool copy_engine)
{
  Segment comm{{}, c, bytes};
  comm.beside_next = true;
  comm.copy_engine = copy_engine;
  pass.push_back(std::move(comm));
  pass.push_back(Segment{std::move(kernels), TpCollective::None, 0});
}

double Transformer::mlp_params(int64_t ffn) const
{
  const double h = double(spec_.hidden), f = double(ffn);
  if (gated())  // no biases
    return 3 * h * f;
  return 2 * h * f + f + h;
}

double Transformer::attention_params() const
{
  const double h = double(spec_.hidden);
  if (spec_.mla.enabled())
    return mla_params(spec_.mla, spec_.hidden, spec_.heads);
  if (gated())
    return h * (attn_width() + 2 * kv_width()) + attn_width() * h;
  return h * (attn_width() + 2 * kv_width()) + (attn_width() + 2 * kv_width()) + attn_width() * h + h;
}

double Transformer::conditioning_params() const
{
  const double h = double(spec_.hidden), n = double(spec_.conditioning_outputs);
  return n * h * h + n * h;  // weight and bias
}

double Transformer::layer_params(bool dense) const
{
  return layer_params_without_conditioning(dense) + conditioning_params();
}

double Transformer::layer_params_without_conditioning(bool dense) const
{
  const double h = double(spec_.hidden);
  const bool x = experts_in(dense);
  // Mixture of experts: the routed experts' MLPs and a router (h x experts, no bias) in place of one MLP, and
  // the shared experts' MLP (with Qwen2-MoE's h x 1 gate) beside them.
  double mlp = x ? double(spec_.experts) * mlp_params(spec_.expert_width()) + h * double(spec_.experts)
                 : mlp_params(spec_.ffn);
  if (x && spec_.shared_ffn > 0)
    mlp += mlp_params(spec_.shared_ffn) + (spec_.shared_expert_gate ? h : 0.0);
  if (spec_.mla.enabled())  // DeepSeek's layers: RMSNorm, no biases
    return attention_params() + mlp + 2 * h;
  if (gated())  // llama-style layers have no biases and RMSNorm with one weight vector
    return h * (attn_width() + 2 * kv_width()) + attn_width() * h + mlp + 2 * h;
  double attn = h * (attn_width() + 2 * kv_width()) + (attn_width() + 2 * kv_width()) + attn_width() * h + h;
  return attn + mlp + 4 * h;  // two layer norms, weight and bias each
}

double Transformer::embedding_params(int64_t seq) const
{
  const double h = double(spec_.hidden);
  double p = double(spec_.vocab) * h;
  if (spec_.learned_positions)
    p += double(std::min<int64_t>(seq, spec_.max_positions)) * h;
  return p;
}

double Transformer::head_params() const
{
  const double h = double(spec_.hidden);
  double norm = gated() ? h : 2 * h;
  return norm + (spec_.tied_embeddings ? 0.0 : double(spec_.vocab) * h);
}

double Transformer::total_params(int64_t seq) const
{
  // Narayanan 2021 Eq. 2 counts the position table at the trained sequence length; so do we.
  if (moe() && spec_.dense_layers > 0)
    return double(spec_.dense_layers) * layer_params(true) +
           double(spec_.layers - spec_.dense_layers) * layer_params(false) + embedding_params(seq) + head_params();
  return double(spec_.layers) * layer_params() + embedding_params(seq) + head_params();
}

double Transformer::active_params(int64_t seq) const
{
  const double E = double(spec_.experts);
  double moe_layer = layer_params(false);
  if (moe())  // the routed experts a token is not sent to
    moe_layer -= (E - double(spec_.experts_per_token)) * mlp_params(spec_.expert_width());
  const double dense = moe() ? double(spec_.dense_layers) : 0.0;
  return dense * layer_params(true) + (double(spec_.layers) - dense) * moe_layer + embedding_params(seq) +
         head_params();
}

double Transformer::mlp_params_per_rank(int64_t tp, int64_t ffn) const
{
  // The matrices (and the fc1 bias) split over tp; the fc2 output bias of GPT-style MLPs is not split.
  const double h = double(spec_.hidden);
  return gated() ? mlp_params(ffn) / double(tp) : (mlp_params(ffn) - h) / double(tp) + h;
}

double Transformer::layer_expert_params_per_rank(int64_t etp, int64_t ep, bool dense) const
{
  // Experts are split over ep ranks, each expert's matrices over the expert tensor parallelism (Megatron-Core's
  // default: tp; 1: whole).
  return experts_in(dense) ? double(spec_.experts) / double(ep) * mlp_params_per_rank(etp, spec_.expert_width())
                           : 0.0;
}

double Transformer::layer_params_per_rank(int64_t tp, int64_t ep, bool dense, int64_t etp) const
{
  const double h = double(spec_.hidden), t = double(tp);
  const bool x = experts_in(dense);
  const double norms = gated() ? 2 * h : 4 * h;  // replicated on every rank
  const double attn_bias = gated() ? 0.0 : h;    // the projection's output bias, not split
  const double router = x ? h * double(spec_.experts) : 0.0;  // replicated on every rank
  const double mlps = x ? double(spec_.experts) * mlp_params(spec_.expert_width()) + router : mlp_params(spec_.ffn);
  double mlp_rank = x ? router + layer_expert_params_per_rank(etp > 0 ? etp : tp, ep, dense)
                      : mlp_params_per_rank(tp, spec_.ffn);
  // Shared experts: a dense MLP split over tp like any other, reduced over the whole data-parallel group; the
  // Qwen2-MoE gate replicated.
  if (x && spec_.shared_ffn > 0)
    mlp_rank += mlp_params_per_rank(tp, spec_.shared_ffn) + (spec_.shared_expert_gate ? h : 0.0);
  // The conditioning linear is replicated on every rank: its input is one vector per sample.
  if (spec_.mla.enabled())
    return mla_params_per_rank(spec_.mla, spec_.hidden, spec_.heads, tp) + norms + mlp_rank + conditioning_params();
  const double attention = layer_params_without_conditioning(dense) - mlps - norms;
  return (attention - attn_bias) / t + attn_bias + norms + mlp_rank + conditioning_params();
}

double Transformer::layer_forward_flops(int64_t tokens, int64_t seq, bool dense) const
{
  const bool x = experts_in(dense);
  const double T = double(tokens), h = double(spec_.hidden), s = double(seq);
  const double f = double(x ? spec_.expert_width() : spec_.ffn);
  double qkv = 2 * T * h * (attn_width() + 2 * kv_width());
  double attention = 2 * 2 * T * s * attn_width();  // scores and attention-over-values
  double proj = 2 * T * attn_width() * h;
  double mlp = 2 * T * h * f * (gated() ? 3 : 2);
  if (x)  // each token goes through num_experts_per_tok experts, after the router
    mlp = mlp * double(spec_.experts_per_token) + 2 * T * h * double(spec_.experts);
  if (x && spec_.shared_ffn > 0)  // and through the shared experts
    mlp += 2 * T * h * double(spec_.shared_ffn) * (gated() ? 3 : 2);
  // The conditioning linear runs once per sample (tokens / seq of them), not per token.
  const double conditioning = 2 * (T / s) * h * h * double(spec_.conditioning_outputs);
  if (spec_.mla.enabled())
    return mla_forward_flops(spec_.mla, spec_.hidden, spec_.heads, T, s) + mlp + conditioning;
  return qkv + attention + proj + mlp + conditioning;
}

double Transformer::logits_forward_flops(int64_t tokens) const
{
  return 2.0 * double(tokens) * double(spec_.hidden) * double(spec_.vocab);
}

namespace {

// A kernel with its backward kernels, or a Megatron conjugate operator: 'f' (identity forward, all-reduce
// backward) or 'g' (all-reduce forward, identity backward) at a tensor-parallel region boundary.
struct Item {
  /// 0 for a kernel; 'f', 'g', 'c' (context-parallel ring), 'a' (expert all-to-all): see assemble; 'm', 'n': an
  /// all-reduce of `bytes` over tp in forward only, in backward only.
  char conjugate = 0;
  Op fwd;
  std::vector<Op> bwd;
  double bytes = 0;  // a conjugate's tensor, when not the layer's boundary activation
  /// A conjugate's tensor when it is all-gathered, when that differs: Transformer Engine gathers fp8 copies.
  double gather_bytes = 0;
  /// An 'f' in front of a column-parallel linear layer: with sequence parallelism (no userbuffers overlap), that
  /// layer's backward gathers its input again beside its input-gradient GEMM and reduce-scatters the input gradient
  /// beside its weight-gradient GEMM (push_column_parallel_backward).
  bool async_backward = false;
  /// A blocking context-parallel all-gather ('k'): the tensor its backward gathers (`bytes`: its forward's).
  double backward_bytes = 0;
};

Op gemm(const std::string& name, double batch, double m, double n, double k, int e)
{
  Op o;
  o.name = name;
  o.kind = Op::Kind::Gemm;
  o.batch = batch;
  o.m = m;
  o.n = n;
  o.k = k;
  o.bytes = double(e) * batch * (m * k + k * n + m * n);
  return o;
}

Op mem(const std::string& name, double bytes)
{
  Op o;
  o.name = name;
  o.kind = Op::Kind::Memory;
  o.bytes = bytes;
  return o;
}

// dY*W^T gives the input gradient, X^T*dY the weight gradient: each has the forward's FLOPs.
Item gemm_item(const std::string& name, double batch, double m, double n, double k, int e)
{
  return {0, gemm(name, batch, m, n, k, e),
          {gemm(name + ".dgrad", batch, m, k, n, e), gemm(name + ".wgrad", batch, k, n, m, e)}};
}

// A GEMM with parameters (a linear layer, the router, the logits): its second backward GEMM is the weight gradient.
Item weighted_gemm_item(const std::string& name, double batch, double m, double n, double k, int e)
{
  Item it = gemm_item(name, batch, m, n, k, e);
  it.bwd[1].weight_gradient = true;
  return it;
}

// A linear layer (QKV, projection, MLP, experts): fp8-capable; with 1-byte inputs under fp8 (`in` = 1; block-scaled
// inputs carry their scales' share), the result stays 16-bit.
Item linear_item(const std::string& name, double batch, double m, double n, double k, int e, double in)
{
  Item it = weighted_gemm_item(name, batch, m, n, k, e);
  for (Op* o : {&it.fwd, &it.bwd[0], &it.bwd[1]}) {
    o->linear = true;
    o->bytes = o->batch * (in * (o->m * o->k + o->k * o->n) + double(e) * o->m * o->n);
  }
  return it;
}

Item mem_item(const std::string& name, double fwd_bytes, double bwd_bytes)
{
  return {0, mem(name, fwd_bytes), {mem(name + ".bwd", bwd_bytes)}};
}

Item conj(char which, double bytes = 0) { return {which, {}, {}, bytes}; }

TpCollective forward_collective(char c, bool sp)
{
  if (c == 'a')  // expert dispatch or combine: an all-to-all in both directions
    return TpCollective::AllToAll;
  if (c == 'f')
    return sp ? TpCollective::AllGather : TpCollective::None;
  return sp ? TpCollective::ReduceScatter : TpCollective::AllReduce;
}

TpCollective backward_collective(char c, bool sp)
{
  if (c == 'a')
    return TpCollective::AllToAll;
  if (c == 'f')
    return sp ? TpCollective::ReduceScatter : TpCollective::AllReduce;
  return sp ? TpCollective::AllGather : TpCollective::None;
}

// A collective over a group of one rank is nothing.
void push_collective(std::vector<Segment>& out, TpCollective c, double bytes, int64_t group)
{
  if (c == TpCollective::None || group == 1)
    return;
  out.push_back(Segment{{}, c, bytes});
}

// A context-parallel all-gather the device waits for (Segment::blocking); none of `bytes` 0.
void push_blocking_context_gather(std::vector<Segment>& out, double bytes, int64_t cp)
{
  if (bytes <= 0 || cp == 1)
    return;
  Segment comm{{}, TpCollective::ContextGather, bytes};
  comm.blocking = true;
  out.push_back(std::move(comm));
}

// The GEMMs a column-parallel layer's backward collectives run beside: the weight-gradient GEMM that is last in the
// run of kernels just pushed, and before it the same layer's input-gradient GEMM (indices into the run's ops). None
// when the run does not hold both.
std::optional<std::pair<size_t, size_t>> layer_backward_gemms(const std::vector<Segment>& out)
{
  if (out.empty() || out.back().is_collective())
    return std::nullopt;
  const auto& ops = out.back().ops;
  size_t w = ops.size();
  while (w > 0 && !ops[w - 1].weight_gradient)
    --w;
  if (w-- == 0)
    return std::nullopt;
  const std::string dgrad = ops[w].name.substr(0, ops[w].name.size() - std::string(".wgrad").size()) + ".dgrad";
  for (size_t d = 0; d < w; ++d)
    if (ops[d].name == dgrad)
      return std::pair{d, w};
  return std::nullopt;
}

// The backward of a column-parallel layer with sequence parallelism, as Megatron-LM's
// LinearWithGradAccumulationAndAsyncCommunication (megatron/core/tensor_parallel/layers.py, since sequence parallelism
// came in, 2022) and Transformer Engine's Linear, LayerNormLinear and LayerNormMLP (v1.8) run it: the layer's input,
// kept sharded, is all-gathered again for the weight gradient, issued before the input-gradient GEMM and waited for
// after it (gather_along_first_dim(..., async_op=True)); the input gradient's reduce-scatter is issued before the
// weight-gradient GEMM and waited for after it (reduce_scatter_along_first_dim(..., async_op=True)). The layer's
// kernels leave the run before them: from its input gradient on, beside the gather; its weight gradient, beside the
// reduce-scatter. Without its two GEMMs in that run, the reduce-scatter is pushed as it is.
void push_column_parallel_backward(std::vector<Segment>& out, double gather_bytes, double scatter_bytes, int64_t tp)
{
  const auto gemms = layer_backward_gemms(out);
  if (!gemms)
    return push_collective(out, TpCollective::ReduceScatter, scatter_bytes, tp);
  auto& ops = out.back().ops;
  const auto [d, w] = *gemms;
  const Op wgrad = ops[w];
  ops.erase(ops.begin() + std::ptrdiff_t(w));
  std::vector<Op> input_grad(ops.begin() + std::ptrdiff_t(d), ops.end());  // the input gradient and what follows it
  ops.erase(ops.begin() + std::ptrdiff_t(d), ops.end());
  if (ops.empty())
    out.pop_back();
  append_beside(out, TpCollective::AllGather, gather_bytes, std::move(input_grad));
  append_beside(out, TpCollective::ReduceScatter, scatter_bytes, {wgrad});
}

// The backward of a column-parallel layer without sequence parallelism, as Megatron-LM's
// LinearWithGradAccumulationAndAsyncCommunication runs it with async_tensor_model_parallel_allreduce (the default
// since late 2021; --no-async-tensor-model-parallel-allreduce turns it off) and Transformer Engine's Linear (v1.8,
// allreduce(dgrad, async_op=...)): the input gradient's all-reduce is issued after the input-gradient GEMM, before the
// weight-gradient GEMM, and waited for after it. The weight gradient leaves the run, beside the all-reduce. Without
// both GEMMs in that run, the all-reduce is pushed as it is.
void push_column_parallel_allreduce(std::vector<Segment>& out, double bytes, int64_t tp)
{
  const auto gemms = layer_backward_gemms(out);
  if (!gemms)
    return push_collective(out, TpCollective::AllReduce, bytes, tp);
  auto& ops = out.back().ops;
  const Op wgrad = ops[gemms->second];
  ops.erase(ops.begin() + std::ptrdiff_t(gemms->second));
  if (ops.empty())
    out.pop_back();
  append_beside(out, TpCollective::AllReduce, bytes, {wgrad});
}

// Transformer Engine's userbuffers run a row-parallel layer's forward reduce-scatter with its GEMM as the `pipeline`
// method by default (UbufCommOverlap::split_overlap_rs, transformer_engine/pytorch/csrc/comm_gemm_overlap.h, v1.8
// lines 382-531): the GEMM in num_splits chunks of rows, each chunk reduce-scattered once its GEMM chunk is done, the
// last one after the whole GEMM. num_splits is 4 in Transformer Engine's defaults (module/base.py initialize_ub: v1.8
// `num_splits=4 if method == "pipeline"`, 2.x get_default_config) and in every userbuffers configuration of
// NeMo-Framework-Launcher 24.07 (launcher_scripts/conf/training/tp_overlap/*.yaml, proj_fprop and fc2_fprop).
constexpr int kUserbuffersPipelineSplits = 4;

// A `ring_exchange` reduce-scatter (CommOverlapP2PBase::split_overlap_rs, transformer_engine/common/
// comm_gemm_overlap/comm_gemm_overlap.cpp, TE v2.9 70f5366 lines 1118-1208): the P2P communicator is built with
// num_splits = tp (CommOverlapP2PBase's constructor passes tp_size; base.py get_default_config `num_splits: tp_size
// if method == "ring_exchange"`), so the GEMM runs as tp chunks of M / tp rows; once they are all done and sent, the
// main stream sums the tp partial chunks (reduce_bf16 or reduce_fp8_in_bf16_out, userbuffers.cu): a memory-bound
// kernel that reads the tp chunks (the reduce-scatter's whole tensor) and writes the rank's own, exposed after the
// GEMM. Its buffer holds the GEMM's 16-bit output: base.py keeps `fp8_buf` only for `pipeline` reduce-scatters.
void add_ring_exchange_reduction(std::vector<Segment>& forward, size_t rs, int64_t tp)
{
  const double bytes = forward[rs].collective_bytes * (1.0 + 1.0 / double(tp));
  Op reduce = mem("ub_rs_reduce", bytes);
  if (rs + 1 < forward.size() && !forward[rs + 1].is_collective())
    forward[rs + 1].ops.insert(forward[rs + 1].ops.begin(), reduce);
  else
    forward.insert(forward.begin() + std::ptrdiff_t(rs + 1), Segment{{reduce}, TpCollective::None, 0});
}

// Marks the forward reduce-scatters right after a linear layer's GEMM (the attention projection, a dense fc2) as
// overlapped with it by their layer's userbuffers method. The experts' GEMMs (one launch per expert) are not
// userbuffers layers.
void mark_pipelined_reduce_scatters(std::vector<Segment>& forward, const UbPipelinedRs& proj, const UbPipelinedRs& fc2,
                                    int64_t tp)
{
  for (size_t i = 1; i < forward.size(); ++i) {
    const Segment& before = forward[i - 1];
    if (forward[i].collective != TpCollective::ReduceScatter || before.is_collective())
      continue;
    const Op& last = before.ops.back();
    if (last.kind == Op::Kind::Gemm && last.linear && last.expert_gemms == 0) {
      forward[i].ub = last.name == "proj" ? proj : fc2;  // the attention projection, or an MLP's second GEMM
      const bool ring = forward[i].ub.method == UbMethod::RingExchange;
      forward[i].ub.chunks = ring ? int(tp) : kUserbuffersPipelineSplits;
      if (ring)
        add_ring_exchange_reduction(forward, i, tp);
    }
  }
}

// Transformer Engine 2.x fills a ring-exchange all-gather's userbuffer before the exchange
// (fill_userbuffers_buffer_for_all_gather, pytorch/module/base.py, v2.9 lines 538-591): CommOverlapP2P::
// copy_into_buffer copies the rank's rows into its chunk of the buffer with a cudaMemcpyAsync on the current
// stream (pytorch/csrc/extensions/comm_gemm_overlap.cpp, v2.9 lines 246-278), so the compute stream reads and writes
// them before the gather starts. The ring-exchange gathers are those that feed a linear GEMM: QKV's and fc1's inputs
// forward, the attention projection's and fc2's output gradients backward (base.py get_default_config, method
// "ring_exchange"); the bulk gathers beside the input-gradient GEMMs copy on the communication stream (lines
// 147-181), beside the kernels, and the experts' gathers are not userbuffers'. TE 1.8 had the norm or the cast write
// into the buffer (layernorm_linear.py get_ubuf_output(0)), which the stack states (kernels.ub_gather_copy).
void mark_userbuffers_gather_copies(std::vector<Segment>& pass, int64_t tp)
{
  for (size_t i = 0; i + 1 < pass.size(); ++i) {
    const Segment& next = pass[i + 1];
    if (pass[i].collective != TpCollective::AllGather || pass[i].beside_next || next.is_collective())
      continue;
    const Op& first = next.ops.front();
    if (first.kind != Op::Kind::Gemm || !first.linear || first.expert_gemms > 0)
      continue;
    Op copy = mem("ub_ag_copy", 2 * pass[i].collective_bytes / double(tp));  // the rank's rows, read and written
    // After the run a beside-next collective holds (closed: it holds exactly its kernels), a run of its own.
    if (i > 0 && !pass[i - 1].is_collective() && !(i > 1 && pass[i - 2].beside_next)) {
      pass[i - 1].ops.push_back(copy);
    } else {
      pass.insert(pass.begin() + std::ptrdiff_t(i), Segment{{copy}, TpCollective::None, 0});
      ++i;
    }
  }
}

// Turns a forward item list into forward and backward segment lists. Backward runs the items in reverse order,
// each kernel's backward kernels, and each conjugate operator's other direction. `dispatch_bytes`: the tokens an
// expert all-to-all ('a') moves (sent and received by one rank, its own share included).
// `async_backward`: the items that allow it run their column-parallel layer's backward collectives beside its GEMMs
// (with sequence parallelism; without it, where `async_allreduce` also holds).
PassProgram assemble(const std::vector<Item>& items, bool sp, double boundary_bytes, int64_t tp,
                     double dispatch_bytes = 0, int64_t ep = 1, int64_t cp = 1, bool async_backward = false,
                     bool async_allreduce = false)
{
  PassProgram p;
  // The tensor a collective moves: an all-gather may move a smaller (fp8) copy.
  auto tensor = [&](const Item& it, TpCollective c) {
    if (c == TpCollective::AllGather && it.gather_bytes > 0)
      return it.gather_bytes;
    return it.bytes > 0 ? it.bytes : boundary_bytes;
  };
  for (const auto& it : items) {
    if (it.conjugate == 'c') {  // context-parallel ring: keys and values of every rank
      push_collective(p.forward, TpCollective::ContextGather, it.bytes, cp);
    } else if (it.conjugate == 'k') {
      push_blocking_context_gather(p.forward, it.bytes, cp);
    } else if (it.conjugate == 'a') {
      push_collective(p.forward, TpCollective::AllToAll, dispatch_bytes, ep);
    } else if (it.conjugate == 'm' || it.conjugate == 'n') {  // an all-reduce in one direction only
      if (it.conjugate == 'm')
        push_collective(p.forward, TpCollective::AllReduce, it.bytes, tp);
    } else if (it.conjugate) {
      const TpCollective c = forward_collective(it.conjugate, sp);
      push_collective(p.forward, c, tensor(it, c), tp);
    } else {
      append_kernels(p.forward, {it.fwd});
    }
  }
  for (auto it = items.rbegin(); it != items.rend(); ++it) {
    if (it->conjugate == 'c') {
      push_collective(p.backward, TpCollective::ContextGatherReduce, it->bytes, cp);
    } else if (it->conjugate == 'k') {
      push_blocking_context_gather(p.backward, it->backward_bytes, cp);
    } else if (it->conjugate == 'a') {
      push_collective(p.backward, TpCollective::AllToAll, dispatch_bytes, ep);
    } else if (it->conjugate == 'm' || it->conjugate == 'n') {
      if (it->conjugate == 'n')
        push_collective(p.backward, TpCollective::AllReduce, it->bytes, tp);
    } else if (it->conjugate) {
      const TpCollective c = backward_collective(it->conjugate, sp);
      if (c == TpCollective::ReduceScatter && async_backward && it->async_backward && tp > 1)
        push_column_parallel_backward(p.backward, tensor(*it, TpCollective::AllGather), tensor(*it, c), tp);
      else if (c == TpCollective::AllReduce && async_backward && async_allreduce && it->async_backward && tp > 1)
        push_column_parallel_allreduce(p.backward, tensor(*it, c), tp);
      else
        push_collective(p.backward, c, tensor(*it, c), tp);
    } else {
      append_kernels(p.backward, it->bwd);
    }
  }
  return p;
}

}  // namespace

PassProgram Transformer::layer(const Shape& sh, bool dense) const
{
  const bool x = experts_in(dense);  // routed experts in this layer
  const int e = sh.elem_bytes;
  const double t = double(sh.tp), b = double(sh.micro_batch), s = double(sh.seq);
  const double sq = s / double(sh.cp);          // queries of each sequence this rank holds (context parallel)
  const double T = b * sq;                      // tokens in the microbatch on this rank
  const double Tn = sh.sp ? T / t : T;          // tokens a rank holds outside the TP regions
  const double h = double(spec_.hidden), f = double(x ? spec_.expert_width() : spec_.ffn);
  // Head widths of the scores (queries and keys) and of the values: head_dim, or MLA's 192 and 128.
  const bool mla = spec_.mla.enabled();
  const double dh = mla ? double(spec_.mla.qk_head_dim()) : double(spec_.head_dim);
  const double dv = mla ? double(spec_.mla.v_head_dim) : dh;
  const double heads = double(spec_.heads) / t;  // attention heads per rank
  const double qkv_n = (attn_width() + 2 * kv_width()) / t;
  const double score_elems = b * heads * sq * s;  // attention matrix elements per rank (its queries, all keys)
  const double mask = 1.0;                       // dropout masks are one byte per element

  std::vector<Item> items;
  // Transformer Engine's fp8 casts before a linear layer's GEMMs (fp8 only): forward, a fused cast-transpose of the
  // input (read e bytes, write the fp8 copy and its fp8 transpose for the weight gradient: e + 2 bytes per element;
  // TE's fp8_cast_transpose_fused) and of the weights (bf16 -> fp8 and transposed, once per step: a share of it per
  // microbatch); backward, the same of the output gradient (fp8_cast_transpose_bgrad_fused). Current scaling reads
  // each tensor once more (e bytes) for its amax first. One kernel per layer and direction in the count.
  // Where the device runs fp8 GEMMs in every layout (Blackwell), the casts write no transpose: TE 2.13's
  // Float8Quantizer and Float8CurrentScalingQuantizer::create_tensor (pytorch/csrc/quantizer.cpp) allocate one only
  // `columnwise_usage && !nvte_is_non_tn_fp8_gemm_supported()`, which is false from compute capability 10.0 on
  // (common/transformer_engine.cpp), and the GEMMs read the one fp8 copy transposed (common/gemm/cublaslt_gemm.cu).
  const double fp8_written = sh.fp8_transpose ? 2.0 : 1.0;  // fp8 bytes a cast writes per element
  // input_amax_given: the kernel before the cast took the input's amax (the norm, fp8_norm_amax), so current
  // scaling makes no amax pass over the input; the weights and the output gradient keep theirs.
  // Under sequence parallelism a tensor gathered over tp (the input of a column-parallel layer, the output gradient
  // of a row-parallel one: in_rows, grad_rows < m) is cast on the rank's own rows before the gather, row-wise only,
  // and the gathered fp8 rows are transposed after it where the device needs the transpose (read 1, write 1 per
  // gathered element): TE 2.x distributed.py _all_gather_fp8 (quantizer usage set row-wise only for the local cast,
  // then out._create_transpose() when columnwise usage and !is_non_tn_fp8_gemm_supported()) for delayed and current
  // scaling alike; TE 1.8 module/base.py grad_output_preprocess (cast_to_fp8, gather_along_first_dim,
  // tex.fp8_transpose) for the delayed output gradient. The input's transpose runs in backward, on the input
  // gathered again for the weight gradient (layernorm_linear.py: the forward gather is row-wise only).
  auto fp8_cast = [&](const std::string& name, double batch, double m, double n, double kk,
                      bool input_amax_given = false, double in_rows = -1, double grad_rows = -1) {
    if (in_rows < 0)
      in_rows = m;
    if (grad_rows < 0)
      grad_rows = m;
    const double amax_pass = sh.fp8_current_scaling ? double(e) : 0.0;
    const double per = double(e) + fp8_written + amax_pass;
    const double input_amax = input_amax_given ? 0.0 : amax_pass;
    const double gathered_transpose = sh.fp8_transpose ? 2.0 : 0.0;  // read 1, write 1 per gathered element
    double input_fwd = (per - amax_pass + input_amax) * m * kk, input_bwd = 0;
    if (in_rows < m) {
      input_fwd = (double(e) + 1 + input_amax) * in_rows * kk;
      input_bwd = gathered_transpose * m * kk;
    }
    double grad = per * m * n;
    if (grad_rows < m)
      grad = (double(e) + 1 + amax_pass) * grad_rows * n + gathered_transpose * m * n;
    return mem_item(name + ".fp8_cast", batch * (input_fwd + per * sh.fp8_weight_cast_share * kk * n),
                    batch * (grad + input_bwd));
  };
  // Block-scaled casts (mxfp8, nvfp4: Transformer Engine's MXFP8Quantizer / NVFP4Quantizer with row- and column-wise
  // usage): the blocks run along the reduction dimension, so a transpose is a second quantization, not a copy, and
  // each cast writes both quantized copies with their block scales (2q bytes per element), the column-wise one for
  // the other GEMM of the pair. Forward: the input, and the weights once per step; backward: the output gradient.
  // MXFP8 reads the 16-bit tensor once (one kernel, block amax inside). NVFP4 (Transformer Engine 2.14, the 26.04
  // and 26.04.01 containers', csrc/quantizer.cpp, NVFP4Quantizer::quantize_impl) reads it twice: an amax pass for
  // the per-tensor scale, then one cast kernel writing both copies. The weights (2D 16x16 scales, no Hadamard
  // transform) take nvte_compute_amax_with_config and nvte_quantize_v2; the inputs and output gradients, whose
  // column-wise copies get the random Hadamard transform, take their amax and the transformed tensor's in one pass
  // (nvte_hadamard_transform_amax), then one kernel that casts row-wise and transforms, casts and transposes
  // column-wise (nvte_quantize_with_hadamard_transform, TE #2555, for bf16 tensors of rows a multiple of 64 and
  // columns of 128: every Llama linear layer's). TE 2.13 ran the column-wise transform-and-cast as a kernel of its
  // own (nvte_hadamard_transform_cast_fusion_columnwise), a third read. The stochastic rounding of the gradients is
  // inside the cast kernel. The norm does not write quantized output: for NVFP4
  // with the transform TE's rmsnorm_fwd takes its unfused path (csrc/extensions/normalization.cpp), for MXFP8
  // without NVTE_NORM_FWD_USE_CUDNN as well; the cast is its own kernel.
  // Under sequence parallelism a tensor that is all-gathered over tp is quantized before the gather, on the rank's
  // own rows (TE 2.13: LayerNormLinear quantizes ln_out, then gather_along_first_dim with the quantizer; the output
  // gradient likewise in grad_output_preprocess): in_rows and grad_rows are the rows each cast reads. NVFP4 keeps its
  // column-wise copies transposed, so a gather of one along the tokens arrives interleaved by rank and is put in
  // order by a copy of the gathered copy (distributed.py, _post_process_nvfp4_gather: _swap_first_dims, read and
  // written): in backward, for the input gathered again for the weight gradient and for the gathered output
  // gradient.
  auto block_cast = [&](const std::string& name, double batch, double m, double n, double kk, double in_rows,
                        double grad_rows) {
    const double q = sh.block_scaled_bytes;
    const double reads = sh.per_tensor_amax ? 2.0 : 1.0;
    const double per_element = reads * double(e) + 2 * q;
    double reorder = 0;
    if (sh.columnwise_transposed) {
      if (in_rows < m)
        reorder += 2 * q * batch * m * kk;
      if (grad_rows < m)
        reorder += 2 * q * batch * m * n;
    }
    return mem_item(name + ".block_cast", batch * per_element * (in_rows * kk + sh.fp8_weight_cast_share * kk * n),
                    per_element * batch * grad_rows * n + reorder);
  };
  // The kernels a block-scaled GEMM runs besides its cast (Transformer Engine 2.13 and 2.14, the 26.04 containers').
  // cuBLASLt reads block scales in a swizzled layout: before each GEMM, general_gemm swizzles the scales of every
  // operand that does not carry them so (pytorch/csrc/extensions/gemm.cpp, swizzle_scales_for_gemm in swizzle.cpp: one
  // nvte_swizzle_scaling_factors kernel per operand and usage, reading and writing the scales). The casts write
  // swizzled scales themselves where their quantizer sets optimize_for_gemm (linear.py, layernorm_linear.py
  // _get_quantizers: the input unless it is gathered, column-parallel under sequence parallelism; the output gradient
  // unless it is gathered, row-parallel under sequence parallelism); the weights' quantizer never sets it, and a
  // gathered tensor arrives with its scales as each rank wrote them. So: the weight's row-wise scales in forward and
  // its column-wise scales for the input gradient; a gathered input's row-wise scales in forward and column-wise
  // ones for the weight gradient; a gathered output gradient's both in backward. NVFP4 adds its alpha kernel before
  // each of the three GEMMs (parallel::Precision::per_gemm_scale_kernel). Each swizzle moves batch x rows x columns
  // x block_scale_bytes each way; the kernels are short, so the device's kernel_min_time sets most of their time.
  auto gemm_scale_kernels = [&](std::vector<Item>& out, const std::string& name, double batch, double m, double n,
                                double kk, bool input_gathered, bool grad_gathered) {
    const double sw = 2 * sh.block_scale_bytes * batch;  // bytes per element of a swizzled operand, read and written
    Item weight{0, mem(name + ".scale_swizzle", sw * n * kk), {mem(name + ".scale_swizzle.dgrad_weight", sw * n * kk)}};
    if (grad_gathered) {
      weight.bwd.push_back(mem(name + ".scale_swizzle.dgrad_grad", sw * m * n));
      weight.bwd.push_back(mem(name + ".scale_swizzle.wgrad_grad", sw * m * n));
    }
    if (input_gathered)
      weight.bwd.push_back(mem(name + ".scale_swizzle.wgrad_input", sw * m * kk));
    if (sh.per_gemm_scale_kernel) {
      weight.bwd.push_back(mem(name + ".gemm_alpha.dgrad", 0));
      weight.bwd.push_back(mem(name + ".gemm_alpha.wgrad", 0));
    }
    out.push_back(std::move(weight));
    if (input_gathered)
      out.push_back(Item{0, mem(name + ".scale_swizzle.input", sw * m * kk), {}});
    if (sh.per_gemm_scale_kernel)
      out.push_back(Item{0, mem(name + ".gemm_alpha", 0), {}});
  };
  auto linear = [&](const std::string& name, double batch, double m, double n, double kk, double in_rows = -1,
                    double grad_rows = -1) {
    if (sh.block_scaled_bytes > 0) {
      if (in_rows < 0)
        in_rows = m;
      if (grad_rows < 0)
        grad_rows = m;
      items.push_back(block_cast(name, batch, m, n, kk, in_rows, grad_rows));
      gemm_scale_kernels(items, name, batch, m, n, kk, in_rows < m, grad_rows < m);
      items.push_back(linear_item(name, batch, m, n, kk, e, sh.block_scaled_bytes));
      return;
    }
    if (sh.fp8)
      items.push_back(fp8_cast(name, batch, m, n, kk, false, in_rows, grad_rows));
    items.push_back(linear_item(name, batch, m, n, kk, e, sh.fp8 ? 1 : e));
  };
  // A layernorm fused with the column-parallel linear after it (Megatron-Core's TELayerNormColumnParallelLinear:
  // QKV, and fc1 of a dense MLP). Under fp8 with delayed scaling Transformer Engine's layernorm writes the fp8 copy
  // itself (TE 1.8 layernorm_linear.py: ln_out_dtype uint8, layernorm_fwd_fp8; with userbuffers into the fp8
  // buffer), so there is no input cast: the layernorm writes 1 byte per element instead of e, and the backward
  // transposes the saved fp8 input for the weight gradient (fp8_transpose: 1 byte read, 1 written per element of
  // the gathered input). The weights' cast and the output gradient's cast-transpose stay. Current scaling needs
  // the tensor's amax before the cast, so its layernorm writes 16-bit and the cast stays separate; from Transformer
  // Engine 2.8 on the norm takes that amax inside its own kernel (csrc/extensions/normalization.cpp, rmsnorm_fwd:
  // FUSED_NORM_AMAX_FP8 unless NVTE_NORM_FWD_USE_CUDNN is set, then Float8CurrentScalingQuantizer::
  // quantize_with_amax, csrc/quantizer.cpp, which skips nvte_compute_amax): the cast reads the norm's output once.
  const bool ln_writes_fp8 = sh.fp8 && !sh.fp8_current_scaling;
  auto layernorm = [&](const std::string& name) {
    const double out = ln_writes_fp8 ? 1.0 : double(e);
    return mem_item(name, (e + out) * Tn * h, 3 * e * Tn * h);
  };
  auto layernorm_linear = [&](const std::string& name, double m, double n) {
    if (sh.fp8 && sh.fp8_norm_amax) {
      items.push_back(fp8_cast(name, 1, m, n, h, true, Tn));
      items.push_back(linear_item(name, 1, m, n, h, e, 1));
      return;
    }
    if (!ln_writes_fp8) {
      linear(name, 1, m, n, h, Tn);  // the input is quantized on the rank's own rows, then gathered
      return;
    }
    const double per = double(e) + fp8_written;  // fp8_cast's bytes per element under delayed scaling
    const double input_transpose = sh.fp8_transpose ? 2 * m * h : 0.0;  // none where fp8 GEMMs take any layout
    items.push_back(
        mem_item(name + ".fp8_cast", per * sh.fp8_weight_cast_share * h * n, per * m * n + input_transpose));
    items.push_back(linear_item(name, 1, m, n, h, e, 1));
  };
  // The tensor-parallel region around dense linear layers: 'f' in front of a column-parallel layer, 'g' after a
  // row-parallel one. Under fp8, Transformer Engine (v1.8) all-gathers the fp8 copies: the layernorm writes its
  // output in fp8 before the forward gather (layernorm_linear.py, layernorm_mlp.py: ln_out_dtype uint8, then
  // gather_along_first_dim), and the output gradient is cast before the backward gather (base.py,
  // grad_output_preprocess: cast_to_fp8, then gather_along_first_dim). Reduce-scatters stay 16-bit. Under mxfp8 and
  // nvfp4 Transformer Engine (2.13 and 2.14, the 26.04 containers') gathers the block-scaled copies with their scales
  // (distributed.py, _all_gather_mxfp8 / _all_gather_nvfp4): the layernorm output forward as its row-wise copy and
  // again in backward as its column-wise copy, q bytes per element each (layernorm_linear.py: quantizer usage
  // rowwise only before the forward gather, columnwise only before the backward one); the output gradient of a
  // row-parallel layer with both usages, 2q (base.py, grad_output_preprocess: the quantizer set row- and column-wise).
  // NVFP4's per-tensor scale must be one across the ranks that gather a tensor: under sequence parallelism TE 2.13
  // and 2.14 all-reduce (max) the amaxes of a column-parallel layer's input and of a row-parallel layer's output
  // gradient over the tensor-parallel group before casting (layernorm_linear.py, linear.py, layernorm_mlp.py:
  // _customize_quantizers_nvfp4 sets with_amax_reduction; quantizer.cpp: allreduce_coalesced of the row- and
  // column-wise amaxes, two fp32, waited for on the stream): 'm' is that all-reduce in forward, 'n' in backward.
  // FP8 current scaling does the same with its one amax (4 bytes): _customize_quantizers_float8_current_scaling
  // (layernorm_linear.py, linear.py, layernorm_mlp.py, TE 2.9 to 2.13) sets with_amax_reduction on a column-parallel
  // layer's input quantizer and a row-parallel layer's output-gradient quantizer under sequence parallelism, and
  // Float8CurrentScalingQuantizer::quantize_impl (csrc/quantizer.cpp) all-reduces (max) the amax over tp and waits
  // for it before the scale and the cast, also on the norm's fused-amax path (quantize_with_amax). torchao's float8
  // casts before the gather too (float8_tensor_parallel.py, PrepareFloat8ModuleInput) with the amax all-reduced over
  // the mesh. Delayed scaling takes last steps' amax history: no collective before its casts.
  const double q = sh.block_scaled_bytes;
  const bool amax_reduction = sh.sp && (sh.per_tensor_amax || (sh.fp8 && sh.fp8_current_scaling));
  const double amax_bytes = sh.per_tensor_amax ? 2 * 4 : 4;
  auto enter_tp = [&]() {
    if (amax_reduction)
      items.push_back(conj('m', amax_bytes));
    Item f = conj('f');
    f.async_backward = true;
    if (sh.fp8)
      f.gather_bytes = T * h;
    else if (q > 0)
      f.gather_bytes = q * T * h;
    items.push_back(f);
  };
  auto leave_tp = [&]() {
    Item g = conj('g');
    if (sh.fp8)
      g.gather_bytes = T * h;
    else if (q > 0)
      g.gather_bytes = 2 * q * T * h;
    items.push_back(g);
    if (amax_reduction)  // after the 'g' here: backward runs the items in reverse
      items.push_back(conj('n', amax_bytes));
  };
  // Attention block: LN -> f -> QKV, scores, softmax, dropout, attention-over-values, projection -> g
  // Adaptive layer-norm conditioning (DiT's adaLN-Zero): one linear layer from the sample's conditioning vector to
  // n hidden-wide shifts, scales and gates, one row per sample (b rows), whole on every rank. Its outputs modulate
  // the two norms' outputs (shift and scale) and the two residual branches (gate): four elementwise passes over the
  // tokens, forward reading and writing each element, backward reading the gradient and the input and writing one.
  if (spec_.conditioning_outputs > 0) {
    items.push_back(weighted_gemm_item("adaln", 1, b, double(spec_.conditioning_outputs) * h, h, e));
    items.push_back(mem_item("adaln_modulate", 4 * 2 * e * Tn * h, 4 * 3 * e * Tn * h));
  }
  items.push_back(mla ? mem_item("layernorm1", 2 * e * Tn * h, 3 * e * Tn * h) : layernorm("layernorm1"));
  if (!mla)  // MLA gathers its latents instead, after its down-projections
    enter_tp();
  if (mla) {
    // Multi-head latent attention (model/mla.hpp): the down-projections on the rank's own tokens, the latents
    // gathered over TP in place of the hidden state, the up-projections split by
    // heads; rotary embedding on the decoupled part of the queries (per head) and of the key (shared by the heads).
    for (const MlaKernel& k : mla_projections(spec_.mla, spec_.hidden, spec_.heads, sh.tp)) {
      const double tokens = k.own_tokens ? Tn : T;
      if (k.kind == MlaKernel::Kind::Linear)
        linear(k.name, 1, tokens, k.n, k.k);
      else if (k.kind == MlaKernel::Kind::Norm)
        items.push_back(mem_item(k.name, 2 * e * tokens * k.n, 3 * e * tokens * k.n));
      else
        items.push_back(conj('f', e * T * k.n));
    }
    const double rope = double(spec_.mla.qk_rope_head_dim) * (heads + 1);
    items.push_back(mem_item("rotary", 2 * e * T * rope, 2 * e * T * rope));
  } else {
    layernorm_linear("qkv", T, qkv_n);
    if (!spec_.learned_positions)  // rotary embedding applied to queries and keys
      items.push_back(mem_item("rotary", 2 * e * T * (attn_width() + kv_width()) / t,
                               2 * e * T * (attn_width() + kv_width()) / t));
  }
  // Context parallel: the rank's queries meet every rank's keys and values, which go round the cp ring while
  // the attention runs on the blocks already there (Megatron-LM's ring attention).
  const bool cp_allgather = sh.cp > 1 && sh.cp_allgather;
  if (sh.cp > 1 && !cp_allgather)
    items.push_back(conj('c', e * b * s * 2 * kv_width() / t));
  // PyTorch's experimental context parallelism (torch/distributed/tensor/experimental/_attention.py, December 2024;
  // the same code in the 2025 versions read) as torchtitan runs it: `_templated_ring_attention` and its backward,
  // traced by torch.compile into each block's graph. Its K and V are torchtitan's, repeated to every query head
  // before SDPA (torchtitan 9dec370 models/llama/model.py, repeat_kv): heads x head_dim wide, not kv_width.
  const double cp_d = double(sh.cp);
  const double kv_elems = b * sq * 2 * heads * dh;  // the rank's repeated K and V
  const double out_elems = b * sq * heads * dv;     // the rank's attention output
  if (cp_allgather) {
    // K, V made contiguous and packed into one buffer (key.contiguous(), torch.cat of both flattened): read once,
    // written twice; the backward does the same before its own gather.
    items.push_back(mem_item("cp_kv_pack", 3 * e * kv_elems, 3 * e * kv_elems));
    // Forward: the default rotater (_AllGatherRotater; torchtitan's context_parallel_rotate_method "allgather")
    // all-gathers every rank's K, V once. Under tracing a functional collective is waited for right after it is
    // issued (_functional_collectives.py, _maybe_wrap_tensor), and Inductor does not move the wait
    // (reorder_for_compute_comm_overlap is off by default): nothing overlaps it. Backward, after the blocks: dK, dV
    // go to the next rank after every block (_AllToAllRotater, permute_tensor; cp transfers of the rank's fp32
    // dK, dV), each waited for at once; timed as the ring all-gather that moves the same bytes per rank, cp x the
    // rank's share (a ring all-gather over cp ranks moves (cp - 1) / cp of its tensor).
    Item gather = conj('k', e * cp_d * kv_elems);
    gather.backward_bytes = 4 * kv_elems * cp_d * cp_d / (cp_d - 1);
    items.push_back(gather);
  }
  std::vector<Item> core;
  if (sh.flash) {
    // One fused kernel, timed as its GEMMs: the scores and the softmax stay on chip (online softmax), so no
    // score-shaped matrix (queries x keys) is read or written; memory traffic is Q, K, V, O and their gradients.
    // Backward recomputes the scores (one more GEMM of the forward's shape) before the four gradient GEMMs.
    // `batch` sequences x heads of `queries` queries against `keys` keys.
    auto fused_attention = [&](const std::string& name, double batch, double queries, double keys, bool causal) {
      const double score_matrix = queries * keys;
      auto on_chip = [&](Op& o) {
        o.bytes = 0;
        for (double elems : {o.m * o.k, o.k * o.n, o.m * o.n})
          if (elems != score_matrix)
            o.bytes += double(e) * o.batch * elems;
      };
      Item scores = gemm_item(name + "_scores", batch, queries, keys, dh, e);
      scores.bwd.insert(scores.bwd.begin(), gemm(name + "_scores.recompute", batch, queries, keys, dh, e));
      Item values = gemm_item(name + "_values", batch, queries, dv, keys, e);
      // The kernel's throughput is looked up at its query length.
      auto fused = [&](Op& o, Op::Fused f) {
        o.fused = f;
        o.attn_seq = queries;
        o.attn_head_dim = dh;
        o.causal = causal;
      };
      for (Item* it : {&scores, &values}) {
        on_chip(it->fwd);
        fused(it->fwd, Op::Fused::AttentionForward);
        for (Op& o : it->bwd) {
          on_chip(o);
          fused(o, Op::Fused::AttentionBackward);
        }
      }
      core.push_back(scores);
      core.push_back(values);
    };
    if (!cp_allgather) {  // every decoder dtsim models is causal: one kernel over all the keys
      fused_attention("attn", b * heads, sq, s, true);
    } else {
      // One SDPA call per K, V block (load-balanced: each rank holds chunks r and 2 cp - 1 - r of 2 cp): its own
      // block, causal; then on steps i <= rank all its queries against the first half of the block, on steps
      // i > rank the second half of its queries against the whole block, not causal. Over the ranks, half of the
      // cp - 1 later steps are of each kind; the same FLOPs as one causal kernel over all the keys.
      const double later = (cp_d - 1) / 2;
      fused_attention("attn", b * heads, sq, sq, true);
      fused_attention("attn_block_first_keys", b * heads * later, sq, sq / 2, false);
      fused_attention("attn_block_last_queries", b * heads * later, sq / 2, sq, false);
    }
  } else {
    core.push_back(gemm_item("attn_scores", b * heads, sq, s, dh, e));
    core.push_back(mem_item("softmax", 2 * e * score_elems, 3 * e * score_elems));
    core.push_back(mem_item("attn_dropout", (2 * e + mask) * score_elems, (2 * e + mask) * score_elems));
    core.push_back(gemm_item("attn_values", b * heads, sq, dv, s, e));
  }
  items.insert(items.end(), core.begin(), core.end());
  if (cp_allgather) {
    // _SDPAMerger (convert_to_f32): after each later block, the running output in fp32 and the block's 16-bit output
    // merged through their log-sum-exps, one kernel once Inductor fuses the pointwise ops (read 4 + 2, write 4
    // bytes per element); a step on the last half of the queries merges those rows and copies the others into a new
    // tensor (torch.cat in _partial_update: read 4, write 4), 9 bytes per element: 9.5 on average. The casts to
    // fp32 and back fuse into the first and last merge. Backward: dQ, dK and dV accumulated in fp32 after every
    // block, the first from zeros (read 2, write 4), the others 9.5 as the merge; dK and dV cast back to 16 bits
    // after the last rotation (read 4, write 2).
    const double merges = (cp_d - 1) * 9.5 * out_elems;
    const double accumulations = (6 + (cp_d - 1) * 9.5) * (out_elems + kv_elems) + 6 * kv_elems;
    items.push_back(mem_item("cp_merge", merges, accumulations));
    // The backward's K, V all-gather: before its first block.
    Item gather = conj('k');
    gather.backward_bytes = e * cp_d * kv_elems;
    items.push_back(gather);
  }
  linear("proj", 1, T, h, mla ? double(spec_.v_width()) / t : attn_width() / t, T, Tn);
  leave_tp();
  // MLP block: bias-dropout-add (residual), LN -> f -> fc1, activation, fc2 -> g -> bias-dropout-add
  items.push_back(mem_item("bias_dropout_add1", (3 * e + mask) * Tn * h, (2 * e + mask) * Tn * h));
  // A dense MLP's fc1 takes the layernorm's output directly; a mixture-of-experts layer's router and permutation
  // come between them (Megatron-Core's pre-MLP layernorm is then a module of its own).
  items.push_back(x ? mem_item("layernorm2", 2 * e * Tn * h, 3 * e * Tn * h) : layernorm("layernorm2"));
  // Experts whole on every rank (expert_tp 1): full-width matrices on the tokens this rank dispatched.
  const bool whole = x && sh.experts_whole;
  const double fn = whole ? f : f / t;
  // Mixture of experts (Megatron-Core's all-to-all token dispatcher; with tp > 1 it needs sequence parallelism):
  // the router scores the rank's own tokens, their top-k copies go to their experts' ranks (all-to-all over ep),
  // the tensor-parallel ranks all-gather what they received (each holds a 1/tp slice of every local expert), the
  // local experts run as one grouped GEMM each over their share, and the way back is a reduce-scatter over tp and
  // an all-to-all. Every rank is modelled as the busiest, whose experts get expert_rank_imbalance() times the mean
  // number of tokens: its grouped GEMMs and tensor-parallel gathers carry that load, and so does the all-to-all, whose
  // time is then the busiest rank's receive (dispatch) and send (combine) time; each rank really sends the mean, so
  // the links carry more than they would (only the busiest rank's links carry that much).
  const double k = x ? double(spec_.experts_per_token) : 1.0;
  const double local_experts = x ? double(spec_.experts) / double(sh.ep) : 1.0;
  const double routed = x ? k * expert_rank_imbalance(spec_, sh.expert_imbalance, sh.ep) : 1.0;
  const double Tx = x ? (whole ? Tn : T) * routed : T;  // tokens through its MLPs
  const double per_expert = Tx / local_experts;
  if (x && spec_.shared_ffn > 0) {
    // Shared experts (DeepSeekMoE; Megatron-Core's SharedExpertMLP): a dense gated MLP on every token, split over
    // tp like any MLP, beside the routed experts; run before the dispatch (no overlap with it modelled).
    const double fs = double(spec_.shared_ffn) / t;
    enter_tp();
    linear("shared_fc1_gate_up", 1, T, 2 * fs, h);
    items.push_back(mem_item("shared_silu_mul", 3 * e * T * fs, 5 * e * T * fs));
    linear("shared_fc2", 1, T, h, fs);
    leave_tp();
  }
  if (x) {
    const double E = double(spec_.experts);
    items.push_back(weighted_gemm_item("router", 1, Tn, E, h, e));
    items.push_back(mem_item("router_topk", (e + 8) * Tn * E, (e + 8) * Tn * E));  // fp32 softmax, top-k, indices
    items.push_back(mem_item("dispatch_permute", 2 * e * Tn * k * h, 2 * e * Tn * k * h));
    items.push_back(conj('a'));
    if (!whole)
      items.push_back(conj('f', e * Tx * h));
  } else {
    enter_tp();
  }
  // The local experts' linear layers, one batched GEMM each on the device side. Megatron-Core runs them through
  // Transformer Engine's GroupedLinear (TEGroupedMLP, megatron/core/transformer/moe/experts.py, with
  // moe_grouped_gemm), whose GEMMs (general_grouped_gemm -> nvte_multi_tensor_gemm) are a host loop of one cuBLASLt
  // call per expert over the compute streams (multi_stream_cublas_gemm, common/gemm/cublaslt_gemm.cu, TE v2.9 and
  // v2.14.1; the CUTLASS grouped GEMM is taken only on Hopper with NVTE_USE_CUTLASS_GROUPED_GEMM): forward, input
  // gradient and weight gradient each issue local_experts launches (Op::expert_gemms, priced by the stack's
  // host.expert_gemm).
  auto experts_linear = [&](const std::string& name, double n, double kk) {
    linear(name, local_experts, per_expert, n, kk);
    Item& gemms = items.back();
    gemms.fwd.expert_gemms = local_experts;
    for (Op& o : gemms.bwd)
      o.expert_gemms = local_experts;
  };
  if (gated()) {
    if (x)
      experts_linear("fc1_gate_up", 2 * fn, h);
    else
      layernorm_linear("fc1_gate_up", T, 2 * fn);
    items.push_back(mem_item("silu_mul", 3 * e * Tx * fn, 5 * e * Tx * fn));
  } else {
    if (x)
      experts_linear("fc1", fn, h);
    else
      layernorm_linear("fc1", T, fn);
    items.push_back(mem_item("bias_gelu", 2 * e * Tx * fn, 3 * e * Tx * fn));
  }
  if (x)
    experts_linear("fc2", h, fn);
  else  // a block-scaled output gradient is quantized on the rank's own rows, then gathered
    linear("fc2", 1, T, h, fn, T, Tn);
  if (x) {
    if (!whole)
      items.push_back(conj('g', e * Tx * h));
    items.push_back(conj('a'));
    items.push_back(mem_item("combine_unpermute", (2 * k + 1) * e * Tn * h, (2 * k + 1) * e * Tn * h));
  } else {
    leave_tp();
  }
  items.push_back(mem_item("bias_dropout_add2", (3 * e + mask) * Tn * h, (2 * e + mask) * Tn * h));

  const double dispatch_bytes = whole ? e * Tn * routed * h : e * Tn * (Tx / T) * h;
  // PyTorch's async TP starts from the passes without tp_overlap and fuses what its pass matches.
  const bool micro_pipeline = sh.tp_comm_overlap && sh.tp_micro_pipeline;
  // Userbuffers runs a column-parallel layer's backward as the asynchronous path does: `ub_bulk_dgrad` all-gathers the
  // saved (sharded) input again beside the input-gradient GEMM and `ub_bulk_wgrad` reduce-scatters the input gradient
  // beside the weight-gradient GEMM (CommOverlapBase::bulk_overlap; TE v1.8 layernorm_linear.py and layernorm_mlp.py
  // backward, `ub_obj_dgrad.bulk_overlap`; TE v2.9 layernorm_linear.py lines 660-667 and 711-740,
  // fill_userbuffers_buffer_for_all_gather then general_gemm(..., bulk_overlap=ctx.ub_bulk_dgrad)), each bulk kernel
  // on 16 SMs by default (base.py initialize_ub: v1.8 line 229 `ub_cfg.get("num_sm", ... 16)`, v2.9
  // get_default_config line 336), the same 16 a beside-next collective takes. So every plan takes that path.
  PassProgram p = assemble(items, sh.sp, e * T * h, sh.tp, dispatch_bytes, sh.ep, sh.cp, true, sh.tp_async_allreduce);
  if (micro_pipeline) {
    fuse_micro_pipeline_tp(p.forward, sh.tp, true);
    fuse_micro_pipeline_tp(p.backward, sh.tp, false);
  } else if (sh.tp_comm_overlap && sh.sp) {
    mark_pipelined_reduce_scatters(p.forward, sh.ub_proj_fprop, sh.ub_fc2_fprop, sh.tp);
    if (sh.ub_gather_copy)
      for (auto* pass : {&p.forward, &p.backward})
        mark_userbuffers_gather_copies(*pass, sh.tp);
  }
  // A layer pass's kernels share the stack's per-layer host time equally.
  for (auto* pass : {&p.forward, &p.backward}) {
    double n = 0;
    for (const auto& seg : *pass)
      n += double(seg.ops.size());
    for (auto& seg : *pass)
      for (auto& op : seg.ops)
        op.layer_share = 1.0 / n;
  }
  if (!sh.flash)  // fused attention stores nothing that selective recomputation would drop
    for (const auto& it : core)
      p.selective_recompute.push_back(it.fwd);
  return p;
}

PassProgram Transformer::embedding(const Shape& sh) const
{
  const int e = sh.elem_bytes;
  const double T = double(sh.micro_batch) * double(sh.seq) / double(sh.cp), h = double(spec_.hidden);
  const double Tn = sh.sp ? T / double(sh.tp) : T;
  std::vector<Item> items;
  // Vocabulary-parallel lookup: each rank gathers the rows it owns, then the partial results are summed (g).
  double lookup = 2 * e * T * h + (spec_.learned_positions ? 3 * e * T * h : 0.0);
  // Backward: F.embedding's gradient is dense (PyTorch's embedding_dense_backward allocates a zeroed vocab x h
  // gradient, then adds the microbatch's rows), and Megatron-Core's DDP hook adds it into the main gradient
  // (param.main_grad.add_(param.grad), distributed_data_parallel.py, core_r0.8.0): the rank's V/tp x h slice
  // written (e), then read (e) with the main gradient (g) and written back (g), every microbatch.
  const double vocab = double(sh.padded_vocab > 0 ? sh.padded_vocab : spec_.vocab);
  const double dense_grad = vocab / double(sh.tp) * h * (2.0 * e + 2.0 * sh.gradient_bytes);
  items.push_back(mem_item("embedding", lookup, 2 * e * T * h + dense_grad));
  items.push_back(conj('g'));
  items.push_back(mem_item("embedding_dropout", (2 * e + 1) * Tn * h, (2 * e + 1) * Tn * h));
  return assemble(items, sh.sp, e * T * h, sh.tp);
}

namespace {
/// The loss over `logits` vocabulary-parallel logit elements of e bytes, by its kernels: bytes read and written per
/// element, forward and backward, counted from each implementation's operations (the max and sum all-reduces
/// across TP are a few bytes per token and left out).
Item cross_entropy_item(CrossEntropyKernel kernel, int e, double logits)
{
  // PyTorch's .float() copies 16-bit logits (read e, write 4) and returns fp32 ones as they are; its backward casts
  // the gradient back the same way (read 4, write e).
  const double to_fp32 = e == 4 ? 0.0 : double(e) + 4;
  switch (kernel) {
    case CrossEntropyKernel::FusedTe:
      // Transformer Engine's Triton kernels (transformer_engine/pytorch/triton/cross_entropy.py, TE 2.9): forward,
      // online_softmax_kernel reads the logits for each row's max and sum, cross_entropy_kernel reads them again and
      // overwrites them with the gradient (3e); backward, element_mul_kernel scales that gradient in place by the
      // per-token output gradient (2e).
      return mem_item("cross_entropy", 3.0 * e * logits, 2.0 * e * logits);
    case CrossEntropyKernel::FusedNative:
      // Megatron-Core's fused_vocab_parallel_cross_entropy (megatron/core/fusions/fused_cross_entropy.py,
      // core_r0.8.0), its functions compiled by torch.compile: the fp32 copy and its max (e + 4), subtract, exp and
      // sum in place (4 + 4), normalise in place (4 + 4); backward scales the probabilities in place and writes the
      // 16-bit gradient (4 + 4 + e).
      return mem_item("cross_entropy", (to_fp32 + 16) * logits, (8.0 + e) * logits);
    case CrossEntropyKernel::Unfused:
      break;
  }
  // Megatron-LM's vocab_parallel_cross_entropy (megatron/core/tensor_parallel/cross_entropy.py; mpu/cross_entropy.py
  // in 2021), one PyTorch kernel per operation: the fp32 copy, max (4), subtract in place (4 + 4), exp in place
  // (4 + 4), sum (4), normalise in place (4 + 4); backward, the gradient scaled in place (4 + 4) and cast back to the
  // logits' e bytes by .float()'s backward (the copy's bytes again).
  return mem_item("cross_entropy", (to_fp32 + 32) * logits, (8 + to_fp32) * logits);
}
}  // namespace

PassProgram Transformer::head(const Shape& sh) const
{
  const int e = sh.elem_bytes;
  const double t = double(sh.tp), T = double(sh.micro_batch) * double(sh.seq) / double(sh.cp);
  const double h = double(spec_.hidden);
  const double Tn = sh.sp ? T / t : T;
  const double vocab = double(sh.padded_vocab > 0 ? sh.padded_vocab : spec_.vocab);
  const double logits = T * vocab / t;  // logit elements per rank
  std::vector<Item> items;
  items.push_back(mem_item("final_layernorm", 2 * e * Tn * h, 3 * e * Tn * h));
  // The output layer is Megatron-LM's own column-parallel linear (16-bit, never a userbuffers layer): its backward
  // collectives run beside its GEMMs.
  Item f = conj('f');
  f.async_backward = true;
  items.push_back(f);
  items.push_back(weighted_gemm_item("logits", 1, T, vocab / t, h, e));
  items.push_back(cross_entropy_item(sh.cross_entropy, e, logits));
  return assemble(items, sh.sp, e * T * h, sh.tp, 0, 1, 1, true, sh.tp_async_allreduce);
}

}  // namespace dtsim::model
