#include "model/transformer.hpp"

#include <algorithm>

namespace dtsim::model {

const char* to_string(TpCollective c)
{
  switch (c) {
    case TpCollective::None: return "none";
    case TpCollective::AllReduce: return "all-reduce";
    case TpCollective::ReduceScatter: return "reduce-scatter";
    case TpCollective::AllGather: return "all-gather";
  }
  return "?";
}

double Transformer::layer_params() const
{
  const double h = double(spec_.hidden), f = double(spec_.ffn);
  double attn = h * (attn_width() + 2 * kv_width()) + (attn_width() + 2 * kv_width()) + attn_width() * h + h;
  double mlp = gated() ? 3 * h * f + 2 * f + h : 2 * h * f + f + h;
  if (gated())  // llama-style layers have no biases and RMSNorm with one weight vector
    return h * (attn_width() + 2 * kv_width()) + attn_width() * h + 3 * h * f + 2 * h;
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
  return double(spec_.layers) * layer_params() + embedding_params(seq) + head_params();
}

double Transformer::layer_params_per_rank(int64_t tp) const
{
  const double h = double(spec_.hidden), t = double(tp);
  double norms = gated() ? 2 * h : 4 * h;
  double replicated_bias = gated() ? 0.0 : 2 * h;  // proj and fc2 output biases are not split
  return (layer_params() - norms - replicated_bias) / t + norms + replicated_bias;
}

double Transformer::layer_forward_flops(int64_t tokens, int64_t seq) const
{
  const double T = double(tokens), h = double(spec_.hidden), f = double(spec_.ffn), s = double(seq);
  double qkv = 2 * T * h * (attn_width() + 2 * kv_width());
  double attention = 2 * 2 * T * s * attn_width();  // scores and attention-over-values
  double proj = 2 * T * attn_width() * h;
  double mlp = 2 * T * h * f * (gated() ? 3 : 2);
  return qkv + attention + proj + mlp;
}

double Transformer::logits_forward_flops(int64_t tokens) const
{
  return 2.0 * double(tokens) * double(spec_.hidden) * double(spec_.vocab);
}

namespace {

// A kernel with its backward kernels, or a Megatron conjugate operator: 'f' (identity forward, all-reduce
// backward) or 'g' (all-reduce forward, identity backward) at a tensor-parallel region boundary.
struct Item {
  char conjugate = 0;  // 0 for a kernel
  Op fwd;
  std::vector<Op> bwd;
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

Item mem_item(const std::string& name, double fwd_bytes, double bwd_bytes)
{
  return {0, mem(name, fwd_bytes), {mem(name + ".bwd", bwd_bytes)}};
}

Item conj(char which) { return {which, {}, {}}; }

TpCollective forward_collective(char c, bool sp)
{
  if (c == 'f')
    return sp ? TpCollective::AllGather : TpCollective::None;
  return sp ? TpCollective::ReduceScatter : TpCollective::AllReduce;
}

TpCollective backward_collective(char c, bool sp)
{
  if (c == 'f')
    return sp ? TpCollective::ReduceScatter : TpCollective::AllReduce;
  return sp ? TpCollective::AllGather : TpCollective::None;
}

void push_ops(std::vector<Segment>& out, std::vector<Op> ops)
{
  if (ops.empty())
    return;
  if (!out.empty() && !out.back().is_collective())
    out.back().ops.insert(out.back().ops.end(), ops.begin(), ops.end());
  else
    out.push_back(Segment{std::move(ops), TpCollective::None, 0});
}

void push_collective(std::vector<Segment>& out, TpCollective c, double bytes, int64_t tp)
{
  if (c == TpCollective::None || tp == 1)
    return;
  out.push_back(Segment{{}, c, bytes});
}

// Turns a forward item list into forward and backward segment lists. Backward runs the items in reverse order,
// each kernel's backward kernels, and each conjugate operator's other direction.
PassProgram assemble(const std::vector<Item>& items, bool sp, double boundary_bytes, int64_t tp)
{
  PassProgram p;
  for (const auto& it : items) {
    if (it.conjugate)
      push_collective(p.forward, forward_collective(it.conjugate, sp), boundary_bytes, tp);
    else
      push_ops(p.forward, {it.fwd});
  }
  for (auto it = items.rbegin(); it != items.rend(); ++it) {
    if (it->conjugate)
      push_collective(p.backward, backward_collective(it->conjugate, sp), boundary_bytes, tp);
    else
      push_ops(p.backward, it->bwd);
  }
  return p;
}

}  // namespace

PassProgram Transformer::layer(const Shape& sh) const
{
  const int e = sh.elem_bytes;
  const double t = double(sh.tp), b = double(sh.micro_batch), s = double(sh.seq);
  const double T = b * s;                       // tokens in the microbatch
  const double Tn = sh.sp ? T / t : T;          // tokens a rank holds outside the TP regions
  const double h = double(spec_.hidden), f = double(spec_.ffn), dh = double(spec_.head_dim);
  const double heads = double(spec_.heads) / t;  // attention heads per rank
  const double qkv_n = (attn_width() + 2 * kv_width()) / t;
  const double score_elems = b * heads * s * s;  // attention matrix elements per rank
  const double mask = 1.0;                       // dropout masks are one byte per element

  std::vector<Item> items;
  // Attention block: LN -> f -> QKV, scores, softmax, dropout, attention-over-values, projection -> g
  items.push_back(mem_item("layernorm1", 2 * e * Tn * h, 3 * e * Tn * h));
  items.push_back(conj('f'));
  items.push_back(gemm_item("qkv", 1, T, qkv_n, h, e));
  if (!spec_.learned_positions)  // rotary embedding applied to queries and keys
    items.push_back(mem_item("rotary", 2 * e * T * (attn_width() + kv_width()) / t,
                             2 * e * T * (attn_width() + kv_width()) / t));
  std::vector<Item> core;
  core.push_back(gemm_item("attn_scores", b * heads, s, s, dh, e));
  core.push_back(mem_item("softmax", 2 * e * score_elems, 3 * e * score_elems));
  core.push_back(mem_item("attn_dropout", (2 * e + mask) * score_elems, (2 * e + mask) * score_elems));
  core.push_back(gemm_item("attn_values", b * heads, s, dh, s, e));
  items.insert(items.end(), core.begin(), core.end());
  items.push_back(gemm_item("proj", 1, T, h, attn_width() / t, e));
  items.push_back(conj('g'));
  // MLP block: bias-dropout-add (residual), LN -> f -> fc1, activation, fc2 -> g -> bias-dropout-add
  items.push_back(mem_item("bias_dropout_add1", (3 * e + mask) * Tn * h, (2 * e + mask) * Tn * h));
  items.push_back(mem_item("layernorm2", 2 * e * Tn * h, 3 * e * Tn * h));
  items.push_back(conj('f'));
  const double fn = f / t;
  if (gated()) {
    items.push_back(gemm_item("fc1_gate_up", 1, T, 2 * fn, h, e));
    items.push_back(mem_item("silu_mul", 3 * e * T * fn, 5 * e * T * fn));
  } else {
    items.push_back(gemm_item("fc1", 1, T, fn, h, e));
    items.push_back(mem_item("bias_gelu", 2 * e * T * fn, 3 * e * T * fn));
  }
  items.push_back(gemm_item("fc2", 1, T, h, fn, e));
  items.push_back(conj('g'));
  items.push_back(mem_item("bias_dropout_add2", (3 * e + mask) * Tn * h, (2 * e + mask) * Tn * h));

  PassProgram p = assemble(items, sh.sp, e * T * h, sh.tp);
  for (const auto& it : core)
    p.selective_recompute.push_back(it.fwd);
  return p;
}

PassProgram Transformer::embedding(const Shape& sh) const
{
  const int e = sh.elem_bytes;
  const double T = double(sh.micro_batch) * double(sh.seq), h = double(spec_.hidden);
  const double Tn = sh.sp ? T / double(sh.tp) : T;
  std::vector<Item> items;
  // Vocabulary-parallel lookup: each rank gathers the rows it owns, then the partial results are summed (g).
  double lookup = 2 * e * T * h + (spec_.learned_positions ? 3 * e * T * h : 0.0);
  items.push_back(mem_item("embedding", lookup, 2 * e * T * h));
  items.push_back(conj('g'));
  items.push_back(mem_item("embedding_dropout", (2 * e + 1) * Tn * h, (2 * e + 1) * Tn * h));
  return assemble(items, sh.sp, e * T * h, sh.tp);
}

PassProgram Transformer::head(const Shape& sh) const
{
  const int e = sh.elem_bytes;
  const double t = double(sh.tp), T = double(sh.micro_batch) * double(sh.seq), h = double(spec_.hidden);
  const double Tn = sh.sp ? T / t : T;
  const double logits = T * double(spec_.vocab) / t;  // logit elements per rank
  std::vector<Item> items;
  items.push_back(mem_item("final_layernorm", 2 * e * Tn * h, 3 * e * Tn * h));
  items.push_back(conj('f'));
  items.push_back(gemm_item("logits", 1, T, double(spec_.vocab) / t, h, e));
  // Vocabulary-parallel cross entropy in fp32: conversion (read e, write 4) and five fp32 passes forward
  // (max, subtract, exp, sum, normalise); backward reads the probabilities, writes the fp32 and the e-byte grads.
  items.push_back(mem_item("cross_entropy", (e + 4 + 5 * 4) * logits, (4 + 4 + e) * logits));
  return assemble(items, sh.sp, e * T * h, sh.tp);
}

}  // namespace dtsim::model
