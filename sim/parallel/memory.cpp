#include "parallel/memory.hpp"

#include <algorithm>

#include "parallel/deferred_gradients.hpp"
#include "stack/optimizer_state.hpp"

namespace dtsim::parallel {

using scenario::Recompute;

namespace {

// One layer's activation bytes for one microbatch on one TP rank, and of them those of its MLP (freed once the MLP's
// backward is done, before the attention's backward begins).
struct LayerBytes {
  double total = 0, mlp = 0;
};

LayerBytes layer_bytes(const model::ModelSpec& m, const model::Shape& sh, bool selective, bool dense)
{
  const bool x = m.experts > 0 && !dense;  // routed experts in this layer
  // Korthikanti et al. 2022, Sec. 4, generalised to any attention and MLP width: in units of s*b*h bytes for
  // 16-bit activations. GPT shapes (f = 4h, no GQA) give exactly Table 2: 10 + 24/t + 5as/(ht).
  const double t = double(sh.tp), h = double(m.hidden), f = double(x ? m.expert_width() : m.ffn);
  const double aw = double(m.heads * m.head_dim), kvw = double(m.kv_heads * m.head_dim);
  const double sq = double(sh.seq);
  // Stored whole on every TP rank unless sequence parallel: both layer-norm inputs, QKV and fc1 inputs, two
  // dropout masks.
  double replicated = 10.0;
  double qkv = 2.0 * (aw + 2.0 * kvw) / h;
  double attn_out = 2.0 * aw / h;
  // Multi-head latent attention: Q, K (qk_head_dim per head) and V (v_head_dim) in place of QKV, and the latents:
  // the RMSNorm inputs on the rank's tokens (replicated), the gathered up-projection inputs whole on every rank.
  double latents = 0;
  if (m.mla.enabled()) {
    const double q_lora = double(m.mla.q_lora_rank), kv_lora = double(m.mla.kv_lora_rank);
    qkv = 2.0 * double(2 * m.qk_width() + m.v_width()) / h;
    attn_out = 2.0 * double(m.v_width()) / h;
    replicated += 2.0 * (q_lora + kv_lora + double(m.mla.qk_rope_head_dim)) / h;
    latents = 2.0 * (q_lora + kv_lora) / h;
  }
  double mlp = (m.family == model::Family::GatedDecoder ? 6.0 : 4.0) * f / h;
  // Mixture of experts: k copies of each token (the busiest rank: times its imbalance) go through the experts,
  // and the dispatched expert inputs (2 bytes per element) are kept whole on every TP rank.
  const double routed =
      x ? double(m.experts_per_token) * model::expert_rank_imbalance(m, sh.expert_imbalance, sh.ep) : 1.0;
  mlp *= routed;
  // With experts whole on every rank (expert_tp 1) each TP rank keeps only the tokens it dispatched.
  double dispatched = x ? 2.0 * routed / (sh.experts_whole ? t : 1.0) : 0.0;
  // Shared experts: one more gated MLP per token (its input is the layer-norm output already counted).
  const double shared = x && m.shared_ffn > 0 ? 6.0 * double(m.shared_ffn) / h : 0.0;
  // Transformer Engine keeps the inputs of the linear layers for backward in their low precision, q bytes per
  // element, not 2: the QKV and fc1 inputs (replicated), the projection input (attn_out) and the fc2 input (2f/h of
  // mlp). fp8: 1 byte. mxfp8 and nvfp4: the column-wise block-scaled copy the weight gradient reads, with its scales
  // (the row-wise one is dropped after the forward GEMM: the input gradient reads the weights and the output
  // gradient only; NVFP4's gathered inputs below are the exception).
  // torchao's Float8Linear saves the 16-bit inputs instead (stack memory.fp8_saves_16bit): nothing changes.
  const double q = sh.low_precision_saves_16bit ? 0.0 : sh.fp8 ? 1.0 : sh.block_scaled_bytes;
  if (q > 0) {
    replicated -= 2.0 * (2.0 - q);
    attn_out *= q / 2.0;
    mlp -= routed * f / h * (2.0 - q);
    dispatched *= q / 2.0;
  }
  // NVFP4 under sequence parallelism keeps the row-wise copy of each input Transformer Engine gathers (QKV's unless
  // MLA gathers its latents instead, a dense fc1's; not the routed experts'): q more bytes per element of the rank's
  // rows (parallel::Precision::saves_gathered_input_rowwise).
  if (q > 0 && sh.saves_gathered_input_rowwise && sh.sp && sh.tp > 1 && !sh.tp_saves_gathered_inputs)
    replicated += q * ((m.mla.enabled() ? 0.0 : 1.0) + (x ? 0.0 : 1.0));
  // torch's tensor parallelism (stack memory.tp_saves_gathered_inputs): PrepareModuleInput redistributes the
  // sequence-sharded norm outputs to Replicate before the QKV and fc1 linears, and autograd saves the gathered
  // tensors, whole on every rank (torchtitan's plan; torch/distributed/tensor/parallel/style.py); Megatron-LM saves
  // the rank's rows and gathers them again in backward (Korthikanti et al. 2022, Sec. 4.2.2). torchao's float8
  // casts before the gather (float8_tensor_parallel.py, PrepareFloat8ModuleInput), so under fp8 the saved inputs are
  // its 1-byte ones.
  double gathered_inputs = 0;
  if (sh.sp && sh.tp > 1 && sh.tp_saves_gathered_inputs) {
    const double input_bytes = q > 0 ? q : 2.0;  // each input as counted in `replicated`
    replicated -= 2.0 * input_bytes;
    gathered_inputs = 2.0 * (sh.fp8 ? 1.0 : 2.0);
  }
  double per_sbh = (sh.sp ? replicated / t : replicated) + gathered_inputs + (qkv + attn_out + mlp) / t + dispatched;
  if (m.mla.enabled() || shared > 0)
    per_sbh += latents + shared / t;
  // softmax output (2), its dropout mask (1) and dropout output (2) per attention score element
  double scores = selective || sh.flash ? 0.0 : 5.0 * double(m.heads) * sq / (h * t);
  // Context parallel: the rank holds seq / cp tokens; its attention scores cover its queries and every key.
  double sbh = sq / double(sh.cp) * double(sh.micro_batch) * h;
  // The MLP's own: its intermediate activations, the dispatched expert inputs, the shared experts', and the fc1
  // input saved gathered (one of the two gathered inputs).
  const double mlp_per_sbh = mlp / t + dispatched + shared / t + gathered_inputs / 2.0;
  return {sbh * (per_sbh + scores) * sh.elem_bytes / 2.0, sbh * mlp_per_sbh * sh.elem_bytes / 2.0};
}

}  // namespace

double layer_activation_bytes(const model::ModelSpec& m, const model::Shape& sh, bool selective, bool dense)
{
  return layer_bytes(m, sh, selective, dense).total;
}

double layer_mlp_activation_bytes(const model::ModelSpec& m, const model::Shape& sh)
{
  return layer_bytes(m, sh, false, false).mlp;
}

double context_parallel_attention_bytes(const model::ModelSpec& m, const model::Shape& sh)
{
  if (sh.cp <= 1 || !sh.cp_allgather)
    return 0.0;
  // PyTorch's experimental context parallelism (stack kernels.context_parallel: torch-allgather;
  // torch/distributed/tensor/experimental/_attention.py, _templated_ring_attention_backward, read at pytorch/pytorch
  // 0123248a; the stack's notes record the same loop in a late-2024 copy; torch 1963fc8 itself was not available.
  // torchtitan 9dec370 runs it with rotate method "allgather", its default in config_manager.py). During one layer's
  // attention backward the rank holds, beside the layer's saved tensors:
  // - the K, V of every rank of the cp group, all-gathered once by _AllGatherRotater and kept for the whole loop
  //   (16-bit; torchtitan repeats K, V to every query head before SDPA: model.py, repeat_kv);
  // - grad_query accumulated in fp32 (_ContextParallelOptions.convert_to_f32, true);
  // - dK, dV in fp32 passed round the ring after every block (ALL_TO_ALL rotater, permute_tensor): the buffer sent
  //   and the one received exist together.
  // Not counted: each block's 16-bit dQ, dK, dV from the flash kernel and the concatenations a fused graph may
  // drop (torch.compile traces the loop; Inductor plans its buffers).
  const double q_width = double(m.qk_width()), k_width = q_width, v_width = double(m.v_width());
  const double tokens = double(sh.seq) / double(sh.cp) * double(sh.micro_batch);
  const double t = double(sh.tp);
  const double gathered_kv = double(sh.cp) * tokens * (k_width + v_width) / t * double(sh.elem_bytes);
  const double grad_query_fp32 = tokens * q_width / t * 4.0;
  const double dkv_fp32_in_flight = 2.0 * tokens * (k_width + v_width) / t * 4.0;
  return gathered_kv + grad_query_fp32 + dkv_fp32_in_flight;
}

double op_checkpoint_layer_bytes(const model::ModelSpec& m, const model::Shape& sh)
{
  // torchtitan 9dec370 (torchtitan/parallelisms/parallelize_llama.py, _apply_ac_to_transformer_block with
  // selective_ac_option "op"): a block's ops are saved when in _save_list (aten.mm, the flash and efficient SDPA
  // kernels, _c10d_functional.reduce_scatter_tensor, abs, max), except every mm whose running count in the block is
  // even. A Llama block calls mm seven times, in order wq wk wv wo w1 w3 w2: wq, wv, w1 and w2 are saved, wk, wo
  // and w3 recomputed with every pointwise op. The checkpoint also keeps the block's input. Elements per token of
  // the microbatch (16-bit), on one TP rank:
  const double t = double(sh.tp), h = double(m.hidden), f = double(m.ffn);
  const double aw = double(m.heads * m.head_dim), kvw = double(m.kv_heads * m.head_dim);
  double elements = (sh.sp ? h / t : h)  // the block's input (sequence-sharded under sequence parallelism)
                    + aw / t             // wq
                    + kvw / t            // wv
                    + aw / t             // SDPA's output
                    + 2.0 * double(m.heads) / t  // and its fp32 log-sum-exp per head (two 16-bit elements)
                    + f / t              // w1
                    + h;                 // w2: the whole hidden width (a partial sum over the full sequence under TP)
  // Under TP with sequence parallelism the outputs of wo and w2 are reduce-scattered, and the save list keeps both.
  if (sh.tp > 1 && sh.sp)
    elements += 2.0 * h / t;
  const double tokens = double(sh.seq) / double(sh.cp) * double(sh.micro_batch);
  return tokens * elements * sh.elem_bytes;
}

double loss_bytes_per_logit(const stack::StackSpec& st, int64_t tp, int activation_bytes)
{
  const double stack_figure = tp > 1 ? st.memory.loss_parallel_bytes_per_logit : st.memory.loss_bytes_per_logit;
  return stack_figure > 0 ? stack_figure : double(activation_bytes) + 8.0;
}

namespace {

// Parameters of the layers of `stage` on one device (`experts_only`: their expert parameters): the dense first
// layers of a model with experts counted as such.
double stage_layer_params(const model::Transformer& t, const DerivedPlan& plan, int64_t stage, bool experts_only)
{
  const int64_t tp = plan.groups.tp, ep = plan.groups.ep, etp = plan.groups.expert_tp;
  auto per_layer = [&](bool dense) {
    return experts_only ? t.layer_expert_params_per_rank(etp, ep, dense) : t.layer_params_per_rank(tp, ep, dense, etp);
  };
  const int64_t n = plan.stage_layers(stage), dense = plan.stage_dense_layers(stage, t.spec());
  if (dense == 0)
    return double(n) * per_layer(false);
  return double(dense) * per_layer(true) + double(n - dense) * per_layer(false);
}

// The word (and learned position) embeddings one device of `stage` holds, if it holds them.
double stage_embedding_params(const model::Transformer& t, const DerivedPlan& plan, int64_t stage)
{
  const auto& m = t.spec();
  if (!plan.holds_embedding(stage))
    return 0.0;
  const double h = double(m.hidden);
  double p = double(m.vocab) * h / double(plan.groups.tp);
  if (m.learned_positions)
    p += double(std::min(plan.shape.seq, m.max_positions)) * h;
  return p;
}

}  // namespace

double stage_params(const model::Transformer& t, const DerivedPlan& plan, int64_t stage)
{
  const auto& m = t.spec();
  const int64_t tp = plan.groups.tp;
  double p = stage_layer_params(t, plan, stage, false) + stage_embedding_params(t, plan, stage);
  const double h = double(m.hidden);
  if (plan.holds_head(stage)) {
    p += t.head_params() - (m.tied_embeddings ? 0.0 : double(m.vocab) * h);  // the final norm
    // Untied models own an output matrix; tied ones keep a copy of the word embeddings on the last stage when
    // it does not hold them already (Megatron-LM; DualPipe's end stages hold both).
    if (!m.tied_embeddings || !plan.holds_embedding(stage))
      p += double(m.vocab) * h / double(tp);
  }
  return p;
}

double stage_expert_params(const model::Transformer& t, const DerivedPlan& plan, int64_t stage)
{
  return stage_layer_params(t, plan, stage, true);
}

int64_t communicators(const DerivedPlan& plan)
{
  const auto& g = plan.groups;
  int64_t n = 0;
  for (int64_t size : {g.tp, g.cp, g.pp, g.dense_dp})
    n += size > 1 ? 1 : 0;
  // Experts: their all-to-all group and their own data-parallel group (dense_dp / ep ranks).
  if (g.ep > 1)
    n += 1 + (g.expert_dp > 1 ? 1 : 0);
  return n;
}

double framework_memory_bytes(const stack::StackSpec& st, const DerivedPlan& plan)
{
  return st.memory.cuda_context_bytes + double(communicators(plan)) * st.memory.nccl_buffer_bytes;
}

MemoryReport estimate_memory(const scenario::ScenarioSpec& s, const DerivedPlan& plan, const model::Transformer& t)
{
  MemoryReport r;
  r.capacity_bytes = s.hardware.device.memory_bytes;
  r.allocator_reserve_bytes = s.stack.memory.fragmentation * r.capacity_bytes;
  r.communicators = communicators(plan);
  const double framework = framework_memory_bytes(s.stack, plan);
  const auto& m = t.spec();
  const int64_t pp = plan.groups.pp, v = plan.groups.vpp, mb = s.microbatches, tp = plan.groups.tp;
  const int e = plan.precision.activation_bytes;
  const double sbh = double(plan.tokens_per_rank) * double(m.hidden);
  const bool full = s.training.recompute == Recompute::Full, op = s.training.op_checkpoint;
  const double per_layer = layer_activation_bytes(m, plan.shape, s.training.recompute == Recompute::Selective);
  // A layer recomputed in full keeps only its input (sharded under sequence parallelism); while it is recomputed
  // during its backward pass, its whole activations are there once more. The other layers keep everything.
  // Under torchtitan's per-op checkpointing every layer keeps its saved set, and its backward recomputes the rest.
  const double op_layer = op ? op_checkpoint_layer_bytes(m, plan.shape) : 0.0;
  const double recomputed = 2.0 * sbh * (plan.shape.sp ? 1.0 / double(tp) : 1.0) * e / 2.0;
  double working = full ? std::max(0.0, layer_activation_bytes(m, plan.shape, false) - op_layer) : 0.0;
  // Under PyTorch's context parallelism a layer's attention backward holds the ring's buffers (the whole group's
  // K, V and fp32 gradients: context_parallel_attention_bytes) once the MLP's activations are freed: the layer in
  // its backward peaks at the larger of the two moments. Without full recomputation the layer's stored
  // activations are counted with those in flight, and the moment adds what the ring holds beyond the MLP's
  // activations (those of a layer kept whole; per-op checkpointing keeps fewer of them).
  if (const double ring = context_parallel_attention_bytes(m, plan.shape); ring > 0) {
    const double mlp = layer_mlp_activation_bytes(m, plan.shape);
    working = full ? std::max(working, working - mlp + ring) : std::max(0.0, ring - mlp);
  }
  // torch.distributed.pipelining keeps each microbatch's stage output until its backward (stage.py,
  // _PipelineStageBase.forward_one_chunk stores it in fwd_cache, backward_one_chunk pops it to call autograd on it);
  // Megatron-LM frees the output's data once sent (schedules.py, deallocate_output_tensor). The output of a stage is
  // its last layer's output: one layer input (sequence-sharded under sequence parallelism) per microbatch. The
  // stage that computes the loss keeps only the loss.
  const double stage_output = s.stack.memory.pipeline_keeps_stage_outputs && pp > 1 ? recomputed : 0.0;
  // torch.distributed.pipelining allocates its receive buffers once, one per microbatch, and keeps them across steps
  // (stage.py: _prepare_backward_infra calls _create_grad_recv_info for every microbatch, _prepare_forward_infra
  // _create_act_recv_info; each allocates a tensor of the stage boundary's shape). The same boundary tensor as a stage
  // output: one sequence-sharded layer input.
  const double recv_buffer = s.stack.memory.pipeline_recv_buffers && pp > 1 ? recomputed : 0.0;
  // The gradient of a received input, made by its microbatch's backward (the same boundary shape), kept to the next
  // step under torch.distributed.pipelining before 2025-10 (stack memory.pipeline_keeps_input_grads): stage_backward
  // (_backward.py) runs torch.autograd.backward, which accumulates it into the receive buffer's .grad, and reads it
  // from there without resetting it; only clear_runtime_states, when the next step begins, sets .grad to None
  // (pytorch/pytorch#164329, 2025-10-01, added the reset after the read).
  const double input_grad = s.stack.memory.pipeline_keeps_input_grads && pp > 1 ? recomputed : 0.0;
  // Each microbatch's stage output kept past its backward to the next step on every stage (stack
  // memory.pipeline_keeps_outputs_to_step_end): before pytorch/pytorch#153383 (2025-05-13) stage.py's
  // forward_one_chunk appended every stage's output to output_chunks, not the last stage's alone, and only
  // clear_runtime_states, when the next step begins, empties it; the backward frees the output's graph, not its data.
  // fwd_cache holds the same tensor until the backward (stage_output above): this counts it once the backward has run.
  const double kept_output = s.stack.memory.pipeline_keeps_outputs_to_step_end && pp > 1 ? recomputed : 0.0;
  // The loss's peak (per logit on this rank): its buffers are freed before the last layer's backward begins, so
  // they and a recomputed layer are never held together.
  const double logits = double(plan.tokens_per_rank) * double(m.vocab) / double(tp) *
                        loss_bytes_per_logit(s.stack, tp, e);
  // The output layer under torch's tensor parallelism (stack memory.tp_saves_gathered_inputs; torchtitan 9dec370's
  // plan: ColwiseParallel(input_layouts=Shard(1)) on "output") all-gathers the final norm's sequence-sharded output
  // and saves it whole for its weight gradient until its backward, which follows the loss's: held with the loss's
  // buffers. 16-bit: torchtitan leaves the output layer out of float8 (module_filter_fn, fqn != "output").
  const double head_input = s.stack.memory.tp_saves_gathered_inputs && tp > 1 && plan.shape.sp
                                ? double(plan.tokens_per_rank) * double(m.hidden) * e
                                : 0.0;
  // The final norm in front of the output layer (stack memory.final_norm_bytes_per_element): torchtitan 9dec370
  // compiles each TransformerBlock alone (parallelize_llama.py, apply_compile), so its RMSNorm (models/norms.py:
  // `self._norm(x.float()).type_as(x) * self.weight`) runs eager and autograd keeps, until the norm's backward (after
  // the output layer's, after the loss's), the fp32 copy of its input (saved by pow and by the mul with the rsqrt)
  // and its 16-bit normalised output (saved by the product with the weight): 4 + 2 bytes per element of its input,
  // the rank's tokens (sequence-sharded under sequence parallelism: torchtitan's plan, "norm": SequenceParallel()).
  const double final_norm_input = sbh / (plan.shape.sp ? double(tp) : 1.0);
  const double final_norm = final_norm_input * s.stack.memory.final_norm_bytes_per_element;
  // The logits of one microbatch (16-bit, the rank's vocabulary share) that the loss's stage keeps to the end of the
  // step under torch.distributed.pipelining (stack memory.pipeline_keeps_logits): stage.py's forward_one_chunk
  // appends the last stage's output to output_chunks, which step() merges for its return value and
  // clear_runtime_states empties only when the next step begins.
  const double kept_logit_bytes = s.stack.memory.pipeline_keeps_logits && pp > 1
                                      ? double(plan.tokens_per_rank) * double(m.vocab) / double(tp) * e
                                      : 0.0;
  // The logits of every microbatch concatenated when the step ends (stack memory.pipeline_merges_outputs): before
  // pytorch/pytorch#165822 (2025-10) PipelineScheduleSingle.step and PipelineScheduleMulti.step return
  // _merge_outputs(output_chunks) on the stage that computes the loss, and merge_chunks (microbatch.py) torch.cats the
  // chunks into a new tensor while output_chunks still holds them; torchtitan 9dec370's train.py discards it. The
  // caching allocator without expandable segments serves a request only from a cached block at least as large,
  // within one cudaMalloc'd segment, each segment made for one request (c10/cuda/CUDACachingAllocator.cpp): a request
  // larger than every earlier one, here larger than the loss's fp32 copy of one microbatch's logits (4 bytes a logit),
  // maps a new segment. In the first step Adam has not yet made its moments (torch.optim.AdamW's _init_group, at its
  // first step(), after the merge), and reserved memory is never returned (torchtitan calls no empty_cache): the
  // stage's reservation is at least its peak less the moments plus the merged logits.
  const double logits_per_microbatch = double(plan.tokens_per_rank) * double(m.vocab) / double(tp);
  const double merged_logit_bytes =
      s.stack.memory.pipeline_merges_outputs && pp > 1 ? double(mb) * logits_per_microbatch * e : 0.0;
  const bool merge_maps_a_segment = merged_logit_bytes > 4.0 * logits_per_microbatch;
  for (int64_t st = 0; st < pp; ++st) {
    StageMemory sm;
    sm.stage = st;
    sm.params = stage_params(t, plan, st);
    sm.framework_bytes = framework;
    const double weight_bytes = plan.precision.weight_bytes;
    // ZeRO (Rajbhandari et al. 2019, Sec. 5): stage 1 shards the optimizer states over the dp ranks, stage 2
    // also the gradients, stage 3 also the weights; stage 3 then holds the gathered weights of the layer being
    // computed and of the one being prefetched.
    // Expert parameters are sharded over their own data-parallel group (dp / ep ranks).
    const int zero = s.parallel.zero;
    const double d = double(plan.groups.dense_dp), de = double(plan.groups.expert_dp);
    const double experts = stage_expert_params(t, plan, st), dense = sm.params - experts;
    auto sharded = [&](int from_stage) { return zero >= from_stage ? dense / d + experts / de : sm.params; };
    // PyTorch FSDP with a 16-bit param_dtype (stack memory.fsdp_fp32_shard_only) keeps the sharded parameter in fp32
    // alone, which is Adam's master copy (counted with its states, optimizer_bytes_per_param), and casts it to 16 bits
    // for each all-gather: FSDP2's FSDPParam.all_gather_inputs returns _to_dtype_if_needed(_sharded_param_data,
    // param_dtype), FSDP1's FlatParamHandle allocates _mp_shard before the gather and frees it in post_unshard
    // (torch/distributed/fsdp/_flat_param.py, _free_low_precision_sharded_param). No 16-bit shard is held.
    const bool fp32_shard_only = zero >= 3 && s.stack.memory.fsdp_fp32_shard_only && weight_bytes < 4 &&
                                 s.training.optimizer_state == stack::OptimizerState::Fp32;
    sm.weights_bytes = fp32_shard_only ? 0.0 : sharded(3) * weight_bytes;
    // Transformer Engine's low-precision copies of the weights (fp8; mxfp8 and nvfp4 row- and column-wise, with
    // their block scales), kept across microbatches: of the layers' linear weights only (the embedding and the
    // output layer are not Transformer Engine modules in Megatron-Core, torchtitan leaves the head in bf16; the
    // layers' norms, 2h of about 12h^2 parameters, are counted with them). With training.fp8_params the layers
    // hold that copy alone: no 16-bit weight beside it.
    if (plan.precision.fp8_linear && !s.stack.memory.fp8_saves_16bit) {
      const double layer_share = stage_layer_params(t, plan, st, false) / sm.params;
      const double copy =
          plan.precision.weight_copy_bytes - (s.training.fp8_params && !fp32_shard_only ? weight_bytes : 0.0);
      sm.weights_bytes += sharded(3) * layer_share * copy;
    }
    // Without resharding after forward (FSDP2's reshard_after_forward=False) every layer of the stage stays
    // gathered from its forward to its backward: the stage's weights are held whole beside their shards. The
    // layers' weights are held as they were gathered: in fp8 with fp8 parameters (torchao's
    // WeightWithDynamicFloat8CastTensor.fsdp_post_all_gather wraps the gathered uint8 data as the Float8Tensor
    // weight, float8/fsdp_utils.py at eab345c; Megatron-Core's uint8 parameter buffer); the embedding and the
    // output layer are not float8 linears and stay 16-bit.
    const double gathered_layer_bytes = gathered_layer_weight_bytes(plan.precision, s.training.fp8_params);
    // The cast shards of one layer, the all-gather's inputs (in fp8 under fp8 all-gather: torchao's
    // fsdp_pre_all_gather casts the fp32 shard), live from the cast to the copy into the flat all-gather buffer.
    // Allocated on the gather's own stream (FSDP2's copy-in stream, FSDP1's pre-unshard stream), their blocks stay
    // reserved in that stream's pool of the caching allocator for the next layer's cast: counted once, at every peak.
    if (fp32_shard_only)
      sm.weights_bytes += t.layer_params_per_rank(tp, plan.groups.ep, false, plan.groups.expert_tp) *
                          (sharded(3) / sm.params) * gathered_layer_bytes;
    if (zero >= 3 && s.parallel.reshard_after_forward) {
      sm.weights_bytes +=
          2.0 * t.layer_params_per_rank(tp, plan.groups.ep, false, plan.groups.expert_tp) * gathered_layer_bytes;
    } else if (zero >= 3) {
      const double layer_params = stage_layer_params(t, plan, st, false);
      sm.weights_bytes += layer_params * gathered_layer_bytes + (sm.params - layer_params) * weight_bytes;
    }
    // Gradients accumulated unsharded until the last microbatch (parallel.defer_gradient_sync) are held whole.
    sm.gradients_bytes = (s.parallel.defer_gradient_sync ? sm.params : sharded(2)) * plan.precision.gradient_bytes;
    // FSDP2's sharded gradients (stack memory.fsdp_gradient_pool): foreach_reduce allocates each reduce-scatter
    // output, of which the sharded gradients are views, under the reduce-scatter stream; the optimizer's zero_grad
    // frees them into that stream's pool, which the caching allocator keeps reserved for the next step's
    // reduce-scatters and never hands to the default stream (a block serves only its own stream). Reduced every
    // step, they are counted above already; with the reduction deferred to the last microbatch, their pool is
    // reserved beside the unsharded gradients at the backward's peak.
    const bool gradient_pool = zero >= 3 && s.parallel.defer_gradient_sync && s.stack.memory.fsdp_gradient_pool;
    if (gradient_pool)
      sm.gradients_bytes += sharded(2) * plan.precision.gradient_bytes;
    // FSDP2's buffers of one layer (stack memory.fsdp_layer_buffers; torch/distributed/_composable/fsdp at torch
    // 1963fc8). foreach_all_gather allocates the flat all-gather output under the all-gather copy-in stream; freed
    // after the copy-out, its block stays in that stream's pool of the caching allocator (a block serves only
    // requests of the stream it was allocated on), where the next layer's gather reuses it: one layer's gathered
    // weights reserved beside the unsharded parameters. In backward, autograd writes the layer's unsharded 16-bit
    // gradients; FSDPParamGroup.post_backward then either upcasts them into the accumulated gradient
    // (FSDPParam.to_accumulated_grad_if_needed, gradient sync deferred) or copies them into foreach_reduce's
    // reduce-scatter input in the reduce dtype, which comm_ctx.reduce_scatter_state keeps until the next layer's
    // post-backward: the layer being computed holds its 16-bit gradients while the previous one's input waits.
    if (zero >= 3 && s.stack.memory.fsdp_layer_buffers) {
      const double layer = t.layer_params_per_rank(tp, plan.groups.ep, false, plan.groups.expert_tp);
      sm.weights_bytes += layer * gathered_layer_bytes;
      // Forward's implicit prefetch keeps the previous layer's flat output (comm_ctx.all_gather_state) until the
      // next layer's copy-out, which runs after that layer's all-gather has allocated its own output
      // (FSDPParamGroup.pre_forward: unshard, then wait_for_unshard): two outputs in the pool. Resharding after
      // forward, the two gathered layers counted above are those two (the layer computed is resharded before the
      // next one's gather: one layer unsharded beside two flat outputs); held gathered, a second output besides.
      if (!s.parallel.reshard_after_forward)
        sm.weights_bytes += layer * gathered_layer_bytes;
      sm.gradients_bytes += layer * plan.precision.weight_bytes;
      if (!s.parallel.defer_gradient_sync)
        sm.gradients_bytes += layer * plan.precision.gradient_bytes;
    }
    sm.optimizer_bytes = sharded(1) * plan.precision.optimizer_bytes_per_param;
    int64_t in_flight = plan.schedule->in_flight(st, pp, v, mb);
    // Uneven stages (parallel.stage_layers): the stage's mean layers per chunk, of which the mean recomputed.
    const double layers_per_chunk = double(plan.stage_layers(st)) / double(v);
    const double recomputed_per_chunk = double(plan.stage_recomputed_layers(st)) / double(v);
    // Dense first layers of a model with experts store less: the stage's mean over its layers.
    double stage_layer = per_layer;
    if (const int64_t dense = plan.stage_dense_layers(st, m); dense > 0) {
      const double n = double(plan.stage_layers(st));
      const double dense_layer =
          layer_activation_bytes(m, plan.shape, s.training.recompute == Recompute::Selective, true);
      stage_layer = (double(dense) * dense_layer + (n - double(dense)) * per_layer) / n;
    }
    const double per_chunk =
        op ? layers_per_chunk * op_layer
           : recomputed_per_chunk * recomputed + (layers_per_chunk - recomputed_per_chunk) * stage_layer;
    // Kept stage outputs: one per chunk-microbatch in flight, but none for the chunk that computes the loss.
    const double output_chunks = plan.holds_head(st) ? double(v - 1) / double(v) : 1.0;
    // Chunks that receive their input (every chunk but the embedding's), and the microbatches whose backward has run
    // at the peak: the stage's last forward has run by then (1F1B's and interleaved 1F1B's steady state, or the
    // loss's stage at its last microbatch), so every chunk-microbatch not in flight is done.
    const double act_chunks = double(v) - (plan.holds_embedding(st) ? 1.0 : 0.0);
    double kept_after_backward = 0;
    // FSDP2 with gradient reduction deferred to each chunk's last backward, over several chunks: the gradients of a
    // chunk exist from its first weight-gradient pass to its last (parallel/deferred_gradients.hpp). The stage's
    // peak is the moment of its order that holds the most activations and gradients together; under interleaved
    // 1F1B with microbatches = pp every backward of the later chunk runs before the first of the earlier one, so
    // the peak holds one chunk's gradients beside every chunk-microbatch in flight.
    if (zero >= 3 && s.parallel.defer_gradient_sync && v > 1 && !plan.two_directions && plan.schedule->stage_orders) {
      const double gradient_bytes = plan.precision.gradient_bytes;
      const double layer_params = stage_layer_params(t, plan, st, false);
      const double embedding_params = stage_embedding_params(t, plan, st);
      const double head_params = sm.params - layer_params - embedding_params;
      // Per chunk: its share of the stage's layers; the embedding sits in chunk 0, the head in the last chunk
      // (looped and V placements alike).
      std::vector<double> chunk_params(size_t(v), layer_params / double(v));
      chunk_params.front() += embedding_params;
      chunk_params.back() += head_params;
      std::vector<double> chunk_gradients;
      for (double p : chunk_params)
        chunk_gradients.push_back(p * gradient_bytes);
      // Every chunk's backwards keep its input's gradient but the embedding's chunk (chunk 0 of its stage), and its
      // output but the loss's chunk (the last of its stage).
      std::vector<double> chunk_kept(size_t(v), input_grad + kept_output);
      if (plan.holds_embedding(st))
        chunk_kept.front() -= input_grad;
      if (plan.holds_head(st))
        chunk_kept.back() -= kept_output;
      const auto order = plan.schedule->stage_orders(pp, v, mb).at(size_t(st));
      const auto peak =
          deferred_gradient_peak(order, v, per_chunk + output_chunks * stage_output, chunk_gradients, chunk_kept);
      in_flight = peak.in_flight;
      kept_after_backward = peak.kept_after_backward_bytes;
      // Held: the unsharded gradients of the chunks in their backward passes, and the sharded ones (zero >= 2) of
      // the chunks already reduce-scattered.
      // With the reduce-scatter stream's pool (gradient_pool), every chunk's sharded gradients are reserved
      // throughout, counted above.
      double held = 0;
      for (size_t c = 0; c < size_t(v); ++c)
        held += peak.chunk_holds[c]                              ? chunk_params[c]
                : peak.chunk_reduced[c] && !gradient_pool ? chunk_params[c] / d
                                                                 : 0.0;
      sm.gradients_bytes += (held - sm.params) * gradient_bytes;
    } else {
      kept_after_backward = std::max(0.0, double(mb * v - in_flight)) *
                            (act_chunks / double(v) * input_grad + output_chunks * kept_output);
    }
    sm.microbatches_in_flight = in_flight;
    // Receive buffers, per microbatch of each chunk: gradients for every chunk but the loss's, activations for every
    // chunk but the embedding's. An activation buffer of a microbatch in flight is its first layer's saved input,
    // already counted (the chunks' share of those in flight).
    const double grad_chunks = double(v) - (plan.holds_head(st) ? 1.0 : 0.0);
    const double recv_buffers =
        grad_chunks * double(mb) + std::max(0.0, act_chunks * (double(mb) - double(in_flight) / double(v)));
    // The head's stage also holds the loss's buffers for the microbatch whose loss is being computed. Under
    // torch.distributed.pipelining it keeps every microbatch's output, the 16-bit logits, until the step ends
    // (stack memory.pipeline_keeps_logits): at the last microbatch's loss the logits of every earlier one, and while
    // its layers are recomputed its own besides.
    double head_peak = std::max(working, logits + head_input + final_norm);
    if (plan.holds_head(st) && kept_logit_bytes > 0)
      head_peak =
          std::max(working + kept_logit_bytes, logits + head_input + final_norm) + double(mb - 1) * kept_logit_bytes;
    sm.activations_bytes = double(in_flight) * (per_chunk + output_chunks * stage_output) + recv_buffers * recv_buffer +
                           kept_after_backward + (plan.holds_head(st) ? head_peak : working);
    if (plan.holds_head(st) && merge_maps_a_segment) {
      const double moments = sharded(1) * stack::optimizer_moment_bytes(s.training.optimizer_state);
      sm.activations_bytes += std::max(0.0, merged_logit_bytes - moments);
    }
    r.stages.push_back(sm);
  }
  for (size_t i = 0; i < r.stages.size(); ++i)
    if (r.stages[i].total_bytes() > r.stages[size_t(r.peak_stage)].total_bytes())
      r.peak_stage = int64_t(i);
  return r;
}

}  // namespace dtsim::parallel
