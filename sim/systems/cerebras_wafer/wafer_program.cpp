#include "systems/cerebras_wafer/wafer_program.hpp"

#include <algorithm>

#include "config/units.hpp"
#include "parallel/memory.hpp"
#include "systems/cerebras_wafer/core_gemm.hpp"
#include "systems/cerebras_wafer/wafer_hardware.hpp"

namespace dtsim::wafer {

using scenario::Recompute;
using scenario::WaferMode;

namespace {

// Kernels on the wafer: GEMMs at the fraction of peak their shape allows on the core array (core_gemm.hpp),
// memory-bound kernels at SRAM bandwidth.
struct Cost {
  double seconds = 0, flops = 0;
};

Cost cost(const std::vector<model::Op>& ops, const scenario::ScenarioSpec& s)
{
  const auto& w = systems::wafer_hardware(s.hardware).wafer;
  const double peak = s.hardware.peak_flops(s.training.precision);
  Cost c;
  for (const auto& op : ops) {
    c.flops += op.flops();
    c.seconds += op.kind == model::Op::Kind::Gemm ? op.flops() / (peak * core_gemm_efficiency(op, w))
                                                  : op.bytes / w.sram_bw_Bps;
  }
  return c;
}

Cost cost(const std::vector<model::Segment>& segs, const scenario::ScenarioSpec& s)
{
  Cost c;
  for (const auto& seg : segs) {
    Cost k = cost(seg.ops, s);
    c.seconds += k.seconds;
    c.flops += k.flops;
  }
  return c;
}

WaferUnit unit(const std::string& label, double params, const model::PassProgram& p, bool full_recompute,
               bool selective, const scenario::ScenarioSpec& s, double out_bytes)
{
  WaferUnit u;
  u.label = label;
  u.params = params;
  u.weight_bytes = params * 2;
  Cost f = cost(p.forward, s), b = cost(p.backward, s);
  u.fwd_s = f.seconds;
  u.fwd_flops = f.flops;
  u.bwd_s = b.seconds;
  u.bwd_flops = b.flops;
  if (full_recompute) {
    u.recompute_s = f.seconds;
    u.recompute_flops = f.flops;
  } else if (selective) {
    Cost r = cost(p.selective_recompute, s);
    u.recompute_s = r.seconds;
    u.recompute_flops = r.flops;
  }
  u.out_bytes = out_bytes;
  return u;
}

}  // namespace

std::string WaferMemory::why_not() const
{
  using config::Dimension;
  using config::format_quantity;
  std::string why;
  if (sram_total() > sram_capacity)
    why += "on-wafer SRAM needs " + format_quantity(sram_total(), Dimension::Bytes) + " (weights and optimizer " +
           format_quantity(sram_weights, Dimension::Bytes) + ", activations " +
           format_quantity(sram_activations, Dimension::Bytes) + ") of " +
           format_quantity(sram_capacity, Dimension::Bytes);
  if (memoryx_total() > memoryx_capacity)
    why += std::string(why.empty() ? "" : "; ") + "MemoryX needs " +
           format_quantity(memoryx_total(), Dimension::Bytes) + " of " +
           format_quantity(memoryx_capacity, Dimension::Bytes);
  return why;
}

WaferMemory wafer_memory(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan,
                         const model::Transformer& t, WaferMode mode)
{
  WaferMemory m;
  m.mode = mode;
  const auto& spec = t.spec();
  const double params = t.total_params(plan.shape.seq);
  const double sbh = double(plan.tokens_per_microbatch) * double(spec.hidden);
  const int e = plan.precision.activation_bytes;
  m.sram_capacity = systems::wafer_hardware(s.hardware).wafer.sram_bytes;
  // Activations kept on the wafer for one pass, as on a GPU without tensor parallelism (Korthikanti et al. 2022),
  // except that the wafer never holds whole attention-score matrices or whole logits: attention and the loss
  // are computed block by block as the data flows through (assumed, docs/wafer.md).
  const bool full = s.training.recompute == Recompute::Full;
  const double per_layer = parallel::layer_activation_bytes(spec, plan.shape, true);
  const double recomputed = double(plan.chunk_recomputed_layers.front());  // one chunk: pp and vpp are 1
  const double working = full ? per_layer : 0.0;
  const double loss_state = double(plan.tokens_per_microbatch) * 8;  // running max and sum
  m.sram_activations = recomputed * 2.0 * sbh * e / 2.0 + (double(spec.layers) - recomputed) * per_layer + working +
                       loss_state;
  // Weight streaming under full recomputation keeps the layer inputs (the checkpoints) off the wafer and brings
  // each back for its layer's backward: the wafer holds one layer's working set and the inputs of the layer
  // computing and of the one moving in or out. Why: the configurations Cerebras ships run micro batches whose
  // checkpoints exceed the SRAM many times (Llama-3.1-70B at 8K tokens, micro batch 8: 80 x 65,536 x 8,192 x 2 B =
  // 86 GB; Llama-3.1-405B at 128K, micro batch 1: 541 GB; a CS-3 has 44 GB), Cerebras names "dynamic memory
  // offload" (release 2.0) and the ALCF CS-3 cluster has activation servers (shared/reference/cerebras.md).
  if (mode == WaferMode::WeightStreaming && full && recomputed == double(spec.layers)) {
    m.offloaded_activations = double(spec.layers) * sbh * e;
    m.sram_activations = working + 2.0 * sbh * e + loss_state;
  }
  if (mode == WaferMode::LayerPipelined) {
    // The whole training state lives on the wafer: 16-bit weights and gradients, fp32 Adam states.
    m.sram_weights = params * 16;
  } else {
    // Weight streaming: two layers' weights (the one computing, the one arriving) and one layer's gradients.
    const double layer = t.layer_params() * 2;
    m.sram_weights = 3 * layer;
    m.memoryx_capacity = systems::wafer_hardware(s.hardware).memoryx.capacity_bytes;
    m.memoryx_weights = params * 2;
    m.memoryx_gradients = params * 2;
    m.memoryx_optimizer = params * 12;
  }
  return m;
}

WaferProgram build_wafer_program(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan,
                                 const model::Transformer& t)
{
  WaferProgram p;
  const auto& spec = t.spec();
  const int e = plan.precision.activation_bytes;
  // The wafer's kernels leave out the busiest expert's extra tokens, fused attention and fp8 GEMMs (not modelled
  // on the wafer); tp, cp and ep are 1 there already.
  model::Shape shape = plan.shape;
  shape.expert_imbalance = 1.0;
  shape.flash = false;
  shape.fp8 = false;
  // The loss is the compiler's, whatever training.cross_entropy says (a GPU framework's choice). Nothing published
  // gives its kernels (../shared/reference/cerebras.md); wafer_memory assumes it runs block by block as the logits
  // flow, keeping a running max and sum per token and never the whole logits. Of the loss kernels the layer model
  // knows, the one that works that way is Transformer Engine's: the logits read for the max and sum, read again for
  // the loss and overwritten with the gradient, which backward scales in place (3 + 2 passes over 16-bit logits; no
  // fp32 copy). Fixed, and documented in docs/wafer.md.
  shape.cross_entropy = model::CrossEntropyKernel::FusedTe;
  const bool selective = s.training.recompute == Recompute::Selective;
  const double act = double(plan.tokens_per_microbatch) * double(spec.hidden) * e;
  auto layer = t.layer(shape), emb = t.embedding(shape), head = t.head(shape);
  p.units.push_back(unit("embedding", t.embedding_params(plan.shape.seq), emb, false, false, s, act));
  const int64_t recomputed = plan.chunk_recomputed_layers.front();  // one chunk: pp and vpp are 1
  // The layer inputs are held off the wafer exactly when wafer_memory says so (weight streaming, every layer
  // recomputed); layer_pipeline.cpp keeps everything on the wafer and ignores them.
  const bool offloaded = s.training.recompute == Recompute::Full && recomputed == spec.layers;
  for (int64_t l = 0; l < spec.layers; ++l) {
    p.units.push_back(unit("layer " + std::to_string(l), t.layer_params(), layer, l < recomputed, selective, s, act));
    p.units.back().offloaded_input_bytes = offloaded ? act : 0.0;
  }
  // A tied output layer reads the word embeddings again: they stream in with the head.
  double head_params = t.head_params() + (spec.tied_embeddings ? double(spec.vocab) * double(spec.hidden) : 0.0);
  p.units.push_back(unit("head", head_params, head, false, false, s, 0));
  p.pass_batch = plan.shape.micro_batch;
  p.passes = s.microbatches;
  // MemoryX's Adam update: fp32 weights, momentum and variance read and written, the gradient read, the 16-bit
  // weights written (28 bytes per parameter).
  p.optimizer_bytes_per_param = 28;
  p.model_flops = plan.model_flops_per_step;
  double recompute = 0;
  for (const auto& u : p.units)
    recompute += u.recompute_flops;
  p.hardware_flops = p.model_flops + recompute * plan.microbatches_per_step;
  return p;
}

}  // namespace dtsim::wafer
