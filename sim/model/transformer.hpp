#pragma once
/// Shapes, parameter counts and per-rank operator lists of a transformer under tensor (and sequence) parallelism.
/// FLOP counts follow Narayanan et al. 2021 (per layer forward 24*B*s*h^2 + 4*B*s^2*h, logits 2*B*s*h*V);
/// activation traffic follows Korthikanti et al. 2022 (Table 2), see ../shared/reference/formulas.md.
#include <cstdint>
#include <vector>

#include "model/cross_entropy_kernel.hpp"
#include "model/model_spec.hpp"
#include "model/ops.hpp"

namespace dtsim::model {

/// What a pass of one layer (or the embedding, or the head) runs on one TP rank.
struct PassProgram {
  std::vector<Segment> forward;
  std::vector<Segment> backward;
  std::vector<Op> selective_recompute;  ///< the attention core, re-run before backward under selective recompute
};

struct Shape {
  int64_t micro_batch = 1;  ///< b
  int64_t seq = 1;          ///< s
  int64_t tp = 1;           ///< t
  bool sp = false;          ///< sequence parallelism
  int elem_bytes = 2;       ///< bytes per activation element (2 for bf16/fp16)
  int64_t ep = 1;           ///< expert parallelism (mixture of experts)
  double expert_imbalance = 1.0;  ///< tokens on the busiest expert relative to the mean (>= 1)
  int64_t cp = 1;           ///< context parallelism: the rank holds seq / cp tokens of each sequence
  bool flash = false;       ///< fused attention (FlashAttention): no score matrix in memory
  bool fp8 = false;         ///< fp8 linear layers (Transformer Engine): 1-byte GEMM inputs
  /// Block-scaled linear layers (training.precision mxfp8 or nvfp4): bytes per element of one quantized copy of a
  /// GEMM input with its block scales (parallel/precision.hpp); 0: not block-scaled.
  double block_scaled_bytes = 0;
  /// NVFP4's per-tensor scale: an amax pass over each tensor before its block-scaled cast.
  bool per_tensor_amax = false;
  /// Column-wise copies stored transposed (NVFP4): a sequence-parallel gather of one is put in order by a copy.
  bool columnwise_transposed = false;
  /// Bytes of block scales per element of a block-scaled copy (mxfp8 1/32, nvfp4 1/16): the scale swizzles before
  /// the GEMMs move them (Transformer::layer).
  double block_scale_bytes = 0;
  /// NVFP4: a kernel before each GEMM computes its alpha from the operands' per-tensor amaxes.
  bool per_gemm_scale_kernel = false;
  /// NVFP4: a sequence-parallel gathered input (QKV's, a dense fc1's) is saved with both block-scaled copies
  /// (parallel::Precision::saves_gathered_input_rowwise); memory only.
  bool saves_gathered_input_rowwise = false;
  /// Transformer Engine's current (per-tensor) scaling: an amax pass over each tensor before its cast (delayed
  /// scaling takes the amax inside the cast kernel).
  bool fp8_current_scaling = false;
  /// Under current scaling, the norm in front of QKV and fc1 takes its output's amax inside its kernel (Transformer
  /// Engine 2.8 on: FUSED_NORM_AMAX_FP8), so the cast of that tensor makes no amax pass of its own.
  bool fp8_norm_amax = false;
  /// Transformer Engine's fp8 casts also write a transposed fp8 copy of each tensor for the GEMMs that take it the
  /// other way round (devices whose fp8 GEMMs run TN only: Hopper, Ada); false on a device that takes fp8 operands
  /// in every layout (hardware device.fp8_non_tn_gemm: Blackwell).
  bool fp8_transpose = true;
  /// Low-precision linear layers that save their 16-bit inputs for backward and recast them there (torchao's
  /// Float8Linear), rather than keeping the low-precision copies (Transformer Engine): activation memory as in bf16.
  bool low_precision_saves_16bit = false;
  /// Under sequence parallelism the QKV and fc1 inputs are saved as gathered, whole on every tp rank (torch's DTensor
  /// tensor parallelism: stack memory.tp_saves_gathered_inputs), not the rank's rows gathered again in backward.
  bool tp_saves_gathered_inputs = false;
  /// Share of the fp8 weight casts a microbatch pays: TE casts the weights on the first microbatch of a step and
  /// reuses them (is_first_microbatch), so 1 / microbatches per step; 1 when unknown.
  double fp8_weight_cast_share = 1.0;
  /// Rows of the output matrix the logits GEMM computes, all TP ranks together: the vocabulary padded as the
  /// framework pads it (see scenario::layer_shape); 0: the model's vocab_size.
  int64_t padded_vocab = 0;
  /// Experts whole on every TP rank (parallel.expert_tp 1 with tp > 1): each rank dispatches its own
  /// sequence-parallel tokens and runs its experts' full matrices on what it receives, with no TP collective around
  /// them; otherwise each expert's matrices are split over tp and the TP ranks gather the tokens they share.
  bool experts_whole = false;
  /// Tensor-parallel communication overlap with userbuffers (parallel.tp_overlap): the collectives overlap the
  /// GEMMs next to them; a column-parallel layer's backward gather and reduce-scatter run beside its GEMMs as
  /// userbuffers' bulk overlaps (the same placement as without it).
  bool tp_comm_overlap = false;
  /// With tp_comm_overlap: each ring-exchange all-gather first copies the rank's rows into the userbuffer on the
  /// compute stream (stack `kernels.ub_gather_copy`; see mark_userbuffers_gather_copies).
  bool ub_gather_copy = false;
  /// With tp_comm_overlap, PyTorch's async tensor parallelism (stack `kernels.tp_overlap: torch-micro-pipeline`):
  /// see fuse_micro_pipeline_tp (model/micro_pipeline_tp.hpp).
  bool tp_micro_pipeline = false;
  /// With tp_comm_overlap: the userbuffers settings of the attention projection's and a dense fc2's overlapped
  /// forward reduce-scatters (scenario `parallel.ub_*`): their method, SMs and set_sm_margin (the layer sets the
  /// chunks).
  UbPipelinedRs ub_proj_fprop{}, ub_fc2_fprop{};
  /// Without sequence parallelism, the column-parallel layers' input-gradient all-reduces run beside their
  /// weight-gradient GEMMs (parallel.tp_async_allreduce).
  bool tp_async_allreduce = false;
  /// The kernels of the loss over the logits (training.cross_entropy).
  CrossEntropyKernel cross_entropy = CrossEntropyKernel::Unfused;
  /// Bytes per element of the gradients the framework accumulates into (main_grad: 4 when it keeps them in fp32).
  int gradient_bytes = 2;
  /// Context parallelism as PyTorch's experimental _attention runs it under torch.compile (stack key
  /// `kernels.context_parallel: torch-allgather`): see Transformer::layer; false: Megatron-LM's overlapped ring.
  bool cp_allgather = false;
};

class Transformer {
 public:
  explicit Transformer(ModelSpec spec) : spec_(std::move(spec)) {}
  const ModelSpec& spec() const { return spec_; }

  /// Parameters of one transformer layer (whole, not divided by TP). `dense`: one of the first dense layers of a
  /// model with experts (first_k_dense_replace); otherwise a layer of the model's own kind.
  double layer_params(bool dense = false) const;
  /// Parameters of one layer's conditioning linear (adaln_conditioning_outputs x hidden x hidden plus bias; 0 without).
  double conditioning_params() const;
  /// Parameters of the input embedding (token table, plus position table when the model has one).
  double embedding_params(int64_t seq) const;
  /// Parameters of the output head (final norm, plus the output matrix when not tied to the input embedding).
  double head_params() const;
  /// Whole-model parameter count (tied embeddings counted once).
  double total_params(int64_t seq) const;
  /// Parameters one token uses: every parameter but the routed experts it is not sent to (with experts, the
  /// num_experts_per_tok routed experts, the shared experts and the router of each MoE layer), embeddings included.
  double active_params(int64_t seq) const;

  /// Parameters one rank holds for one layer (matrices divided by t, norms replicated; with experts, the expert
  /// matrices also divided by ep).
  /// `etp`: the experts' tensor parallelism (parallel.expert_tp; 0: tp).
  double layer_params_per_rank(int64_t tp, int64_t ep = 1, bool dense = false, int64_t etp = 0) const;
  /// Of those, the expert parameters (reduced over the expert-data-parallel group, not the whole dp group), each
  /// expert's matrices split over `etp` ranks.
  double layer_expert_params_per_rank(int64_t etp, int64_t ep, bool dense = false) const;
  bool moe() const { return spec_.experts > 0; }
  /// Whether layer `l` is one of the first dense layers of a model with experts.
  bool dense_layer(int64_t l) const { return moe() && !spec_.moe_layer(l); }

  /// Forward FLOPs of one layer for one microbatch, whole (all TP ranks together).
  double layer_forward_flops(int64_t tokens, int64_t seq, bool dense = false) const;
  /// Forward FLOPs of the logits for one microbatch, whole.
  double logits_forward_flops(int64_t tokens) const;

  PassProgram layer(const Shape& s, bool dense = false) const;
  PassProgram embedding(const Shape& s) const;
  PassProgram head(const Shape& s) const;

 private:
  double attn_width() const { return double(spec_.heads) * double(spec_.head_dim); }
  double kv_width() const { return double(spec_.kv_heads) * double(spec_.head_dim); }
  bool gated() const { return spec_.family == Family::GatedDecoder; }
  /// Parameters of one MLP of width `ffn`, whole, and on one TP rank.
  double mlp_params(int64_t ffn) const;
  /// layer_params without the conditioning linear.
  double layer_params_without_conditioning(bool dense) const;
  double mlp_params_per_rank(int64_t tp, int64_t ffn) const;
  /// Parameters of the attention block (with its biases; no norms), whole.
  double attention_params() const;
  /// Whether the layer runs routed experts.
  bool experts_in(bool dense) const { return moe() && !dense; }
  ModelSpec spec_;
};

}  // namespace dtsim::model
