// Memory as frameworks hold it, from their code (issue 35, item 7): the optimizer states a framework keeps
// (training.optimizer_state), weights held in fp8 alone (training.fp8_params), torchao's float8 that saves 16-bit
// inputs (stack memory.fp8_saves_16bit), Transformer Engine's weight copies on the layers only, and the stage outputs
// torch.distributed.pipelining keeps until their backward (stack memory.pipeline_keeps_stage_outputs), its receive
// buffers kept per microbatch (memory.pipeline_recv_buffers), the logits its last stage keeps to the step's end
// (memory.pipeline_keeps_logits), the received inputs' gradients it keeps to the next step
// (memory.pipeline_keeps_input_grads), every stage's outputs it keeps past their backward
// (memory.pipeline_keeps_outputs_to_step_end), the logits it merges when the step ends
// (memory.pipeline_merges_outputs), FSDP2's per-layer buffers (memory.fsdp_layer_buffers), its sharded
// gradients' reduce-scatter pool (memory.fsdp_gradient_pool), its fp32 shard kept alone
// (memory.fsdp_fp32_shard_only), its gradients held chunk by chunk when their reduction waits for each chunk's last
// backward, and the inputs torch's tensor parallelism saves gathered (memory.tp_saves_gathered_inputs), the eager final
// norm's saved tensors held with the loss (memory.final_norm_bytes_per_element), and the buffers of PyTorch's context
// parallelism in a layer's attention backward (kernels.context_parallel: torch-allgather).
// Expected values are the byte counts of those code facts, computed here.
#include <gtest/gtest.h>

#include <utility>

#include "model/transformer.hpp"
#include "parallel/deferred_gradients.hpp"
#include "parallel/memory.hpp"
#include "scenario/scenario_spec.hpp"
#include "stack/optimizer_state.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::parallel::derive_plan;
using dtsim::parallel::estimate_memory;
using dtsim::parallel::stage_params;
using dtsim::scenario::Recompute;
using dtsim::scenario::ScenarioSpec;
using dtsim::stack::OptimizerState;
using dtsim::test::load_model_or_throw;

// GPT-3 175B at tp 8, pp 8: stage 1 holds layers only (no embedding, no head).
ScenarioSpec gpt3_175b_at_precision(const std::string& precision)
{
  ScenarioSpec s;
  s.model = load_model_or_throw("models/gpt3-175b.yaml");
  s.parallel.tp = 8;
  s.parallel.pp = 8;
  s.parallel.dp = 1;
  s.parallel.sp = true;
  s.devices = 64;
  s.training.seq_len = 2048;
  s.training.micro_batch = 1;
  s.training.global_batch = 8;
  s.training.precision = precision;
  s.training.recompute = Recompute::Selective;
  s.microbatches = 8;
  s.hardware.kind = "gpu-cluster";
  s.hardware.device.memory_bytes = 80.0 * 1073741824.0;
  return s;
}

// The same model under FSDP2 (zero 3 over dp 2) as torch pipelining runs it: layers stay gathered after forward and
// the fp32 gradients are reduced once, after the last microbatch.
ScenarioSpec fsdp2_pipelined_gpt3_175b()
{
  auto s = gpt3_175b_at_precision("bf16");
  s.parallel.zero = 3;
  s.parallel.dp = 2;
  s.devices = 128;
  s.parallel.reshard_after_forward = false;
  s.parallel.defer_gradient_sync = true;
  s.stack.memory.fp32_gradients = true;
  return s;
}

TEST(MemoryAsHeld, OptimizerStateBytesFollowTheFramework)
{
  EXPECT_EQ(dtsim::stack::optimizer_state_bytes(OptimizerState::Fp32, false), 12);
  EXPECT_EQ(dtsim::stack::optimizer_state_bytes(OptimizerState::Fp32Remainders, false), 10);
  EXPECT_EQ(dtsim::stack::optimizer_state_bytes(OptimizerState::Bf16, false), 4);
  EXPECT_EQ(dtsim::stack::optimizer_state_bytes(OptimizerState::Fp32, true), 8);
  auto s = gpt3_175b_at_precision("bf16");
  dtsim::model::Transformer t(s.model);
  const double fp32 = estimate_memory(s, derive_plan(s), t).stages[1].optimizer_bytes;
  s.training.optimizer_state = OptimizerState::Fp32Remainders;
  const double remainders = estimate_memory(s, derive_plan(s), t).stages[1].optimizer_bytes;
  s.training.optimizer_state = OptimizerState::Bf16;
  const double bf16 = estimate_memory(s, derive_plan(s), t).stages[1].optimizer_bytes;
  EXPECT_DOUBLE_EQ(remainders / fp32, 10.0 / 12.0);
  EXPECT_DOUBLE_EQ(bf16 / fp32, 4.0 / 12.0);
}

TEST(MemoryAsHeld, Fp8ParamsDropTheBf16CopyOfTheLayersWeights)
{
  for (const char* precision : {"fp8", "mxfp8"}) {
    auto s = gpt3_175b_at_precision(precision);
    dtsim::model::Transformer t(s.model);
    const auto plan = derive_plan(s);
    const double params = stage_params(t, plan, 1);
    const double both = estimate_memory(s, plan, t).stages[1].weights_bytes;
    EXPECT_NEAR(both, params * (2.0 + plan.precision.weight_copy_bytes), 1e-6 * both) << precision;
    s.training.fp8_params = true;
    const double alone = estimate_memory(s, derive_plan(s), t).stages[1].weights_bytes;
    EXPECT_NEAR(alone, params * plan.precision.weight_copy_bytes, 1e-6 * alone) << precision;
  }
}

TEST(MemoryAsHeld, WeightCopiesLeaveTheEmbeddingInBf16)
{
  auto s = gpt3_175b_at_precision("fp8");
  dtsim::model::Transformer t(s.model);
  const auto plan = derive_plan(s);
  const auto r = estimate_memory(s, plan, t);
  // Stage 0 holds the word embeddings besides its layers: they get no fp8 copy.
  double embedding = double(s.model.vocab) * double(s.model.hidden) / 8.0;
  if (s.model.learned_positions)  // GPT-3's position table, whole on every TP rank
    embedding += double(s.training.seq_len) * double(s.model.hidden);
  const double layers = stage_params(t, plan, 0) - embedding;
  EXPECT_NEAR(r.stages[0].weights_bytes, 2.0 * (layers + embedding) + 1.0 * layers, 1e-3 * r.stages[0].weights_bytes);
}

TEST(MemoryAsHeld, TorchaoFloat8HoldsWhatBf16Holds)
{
  auto bf16 = gpt3_175b_at_precision("bf16");
  auto fp8 = gpt3_175b_at_precision("fp8");
  fp8.stack.memory.fp8_saves_16bit = true;
  dtsim::model::Transformer t(bf16.model);
  const auto a = estimate_memory(bf16, derive_plan(bf16), t), b = estimate_memory(fp8, derive_plan(fp8), t);
  EXPECT_DOUBLE_EQ(b.stages[0].activations_bytes, a.stages[0].activations_bytes);
  EXPECT_DOUBLE_EQ(b.stages[0].weights_bytes, a.stages[0].weights_bytes);
  // Transformer Engine's fp8 keeps 1-byte inputs: less.
  fp8.stack.memory.fp8_saves_16bit = false;
  EXPECT_LT(estimate_memory(fp8, derive_plan(fp8), t).stages[0].activations_bytes, a.stages[0].activations_bytes);
}

// torch.distributed.pipelining keeps each microbatch's stage output (one sequence-sharded layer input, 2 bytes per
// element) from its forward to its backward: on every stage but the loss's, one per microbatch in flight.
TEST(MemoryAsHeld, PipeliningKeepsOneStageOutputPerMicrobatchInFlight)
{
  auto megatron = gpt3_175b_at_precision("bf16");
  auto torch_pp = megatron;
  torch_pp.stack.memory.pipeline_keeps_stage_outputs = true;
  dtsim::model::Transformer t(megatron.model);
  const auto a = estimate_memory(megatron, derive_plan(megatron), t);
  const auto b = estimate_memory(torch_pp, derive_plan(torch_pp), t);
  const double output_bytes = 2048.0 * 1.0 * 12288.0 / 8.0 * 2.0;  // seq * micro_batch * hidden / tp, bf16
  for (size_t st = 0; st + 1 < a.stages.size(); ++st)
    EXPECT_DOUBLE_EQ(b.stages[st].activations_bytes - a.stages[st].activations_bytes,
                     double(a.stages[st].microbatches_in_flight) * output_bytes)
        << "stage " << st;
  // The last stage's output is the loss: nothing more.
  EXPECT_DOUBLE_EQ(b.stages.back().activations_bytes, a.stages.back().activations_bytes);
  // Without pipeline parallelism there is no stage output to keep.
  auto one_stage = torch_pp;
  one_stage.parallel.pp = 1;
  one_stage.devices = 8;
  one_stage.stack.memory.pipeline_keeps_stage_outputs = false;
  const double without = estimate_memory(one_stage, derive_plan(one_stage), t).stages[0].activations_bytes;
  one_stage.stack.memory.pipeline_keeps_stage_outputs = true;
  EXPECT_DOUBLE_EQ(estimate_memory(one_stage, derive_plan(one_stage), t).stages[0].activations_bytes, without);
}

// torch.distributed.pipelining allocates one receive buffer per microbatch (a sequence-sharded layer input): for
// gradients on every stage but the last, for activations on every stage but the first, less those of the microbatches
// in flight (their first layer's saved input, already counted).
TEST(MemoryAsHeld, PipeliningKeepsReceiveBuffersPerMicrobatch)
{
  auto plain = gpt3_175b_at_precision("bf16");
  auto torch_pp = plain;
  torch_pp.stack.memory.pipeline_recv_buffers = true;
  dtsim::model::Transformer t(plain.model);
  const auto a = estimate_memory(plain, derive_plan(plain), t);
  const auto b = estimate_memory(torch_pp, derive_plan(torch_pp), t);
  const double buffer = 2048.0 * 1.0 * 12288.0 / 8.0 * 2.0;  // seq * micro_batch * hidden / tp, bf16
  const size_t last = a.stages.size() - 1;
  for (size_t st = 0; st <= last; ++st) {
    const double grads = st == last ? 0.0 : 8.0;
    const double acts = st == 0 ? 0.0 : 8.0 - double(a.stages[st].microbatches_in_flight);
    EXPECT_DOUBLE_EQ(b.stages[st].activations_bytes - a.stages[st].activations_bytes, (grads + acts) * buffer)
        << "stage " << st;
  }
  EXPECT_GT(b.stages[last].activations_bytes, a.stages[last].activations_bytes);  // 1F1B: one in flight, 8 buffers
}

// torch.distributed.pipelining before 2025-10 keeps the gradient of every received input (a sequence-sharded layer
// input) that a backward has made, in the receive buffer's .grad, until the next step: none on the first stage (its
// input is the tokens), and on the others one per microbatch whose backward has run at the peak, which comes with the
// stage's last forward under 1F1B (8 - in flight), the loss's stage at its last microbatch (7 of 8).
TEST(MemoryAsHeld, PipeliningKeepsInputGradientsToTheNextStep)
{
  auto plain = gpt3_175b_at_precision("bf16");
  auto torch_pp = plain;
  torch_pp.stack.memory.pipeline_keeps_input_grads = true;
  dtsim::model::Transformer t(plain.model);
  const auto a = estimate_memory(plain, derive_plan(plain), t);
  const auto b = estimate_memory(torch_pp, derive_plan(torch_pp), t);
  const double gradient = 2048.0 * 1.0 * 12288.0 / 8.0 * 2.0;  // seq * micro_batch * hidden / tp, bf16
  EXPECT_DOUBLE_EQ(b.stages[0].activations_bytes, a.stages[0].activations_bytes);
  for (size_t st = 1; st < a.stages.size(); ++st)
    EXPECT_DOUBLE_EQ(b.stages[st].activations_bytes - a.stages[st].activations_bytes,
                     (8.0 - double(a.stages[st].microbatches_in_flight)) * gradient)
        << "stage " << st;
  EXPECT_DOUBLE_EQ(b.stages.back().activations_bytes - a.stages.back().activations_bytes, 7.0 * gradient);
  // Without pipeline parallelism there is no received input.
  auto one_stage = torch_pp;
  one_stage.parallel.pp = 1;
  one_stage.devices = 8;
  auto one_stage_plain = one_stage;
  one_stage_plain.stack.memory.pipeline_keeps_input_grads = false;
  EXPECT_DOUBLE_EQ(estimate_memory(one_stage, derive_plan(one_stage), t).stages[0].activations_bytes,
                   estimate_memory(one_stage_plain, derive_plan(one_stage_plain), t).stages[0].activations_bytes);
}

// torch.distributed.pipelining before 2025-05 (pytorch/pytorch#153383) appends every stage's output to output_chunks
// and empties it only when the next step begins: past its backward each microbatch's output (a sequence-sharded layer
// input) stays, on every stage but the loss's (its output is the logits), one per microbatch not in flight at the peak.
TEST(MemoryAsHeld, PipeliningKeepsStageOutputsToTheNextStep)
{
  auto plain = gpt3_175b_at_precision("bf16");
  auto torch_pp = plain;
  torch_pp.stack.memory.pipeline_keeps_outputs_to_step_end = true;
  dtsim::model::Transformer t(plain.model);
  const auto a = estimate_memory(plain, derive_plan(plain), t);
  const auto b = estimate_memory(torch_pp, derive_plan(torch_pp), t);
  const double output = 2048.0 * 1.0 * 12288.0 / 8.0 * 2.0;  // seq * micro_batch * hidden / tp, bf16
  const size_t last = a.stages.size() - 1;
  double kept_somewhere = 0;
  for (size_t st = 0; st < last; ++st) {
    const double done = 8.0 - double(a.stages[st].microbatches_in_flight);
    EXPECT_DOUBLE_EQ(b.stages[st].activations_bytes - a.stages[st].activations_bytes, done * output) << "stage " << st;
    kept_somewhere += done;
  }
  EXPECT_GT(kept_somewhere, 0.0);  // 1F1B: the later stages have finished microbatches at their peak
  EXPECT_DOUBLE_EQ(b.stages[last].activations_bytes, a.stages[last].activations_bytes);
  // Without pipeline parallelism there is no stage output.
  auto one_stage = torch_pp;
  one_stage.parallel.pp = 1;
  one_stage.devices = 8;
  auto one_stage_plain = one_stage;
  one_stage_plain.stack.memory.pipeline_keeps_outputs_to_step_end = false;
  EXPECT_DOUBLE_EQ(estimate_memory(one_stage, derive_plan(one_stage), t).stages[0].activations_bytes,
                   estimate_memory(one_stage_plain, derive_plan(one_stage_plain), t).stages[0].activations_bytes);
}

// FSDP2 (zero 3) holds one layer's flat all-gather output in its stream's pool, the layer's 16-bit unsharded
// gradients, and, when gradients are reduced every step, the previous layer's reduce-scatter input (fp32 here).
TEST(MemoryAsHeld, Fsdp2HoldsOneLayersBuffers)
{
  auto plain = gpt3_175b_at_precision("bf16");
  plain.parallel.zero = 3;
  plain.parallel.dp = 2;
  plain.devices = 128;
  plain.stack.memory.fp32_gradients = true;
  auto fsdp2 = plain;
  fsdp2.stack.memory.fsdp_layer_buffers = true;
  dtsim::model::Transformer t(plain.model);
  const auto a = estimate_memory(plain, derive_plan(plain), t);
  const auto b = estimate_memory(fsdp2, derive_plan(fsdp2), t);
  const double layer = 12.0 * 12288.0 * 12288.0 / 8.0;  // about 12 h^2 parameters per layer over tp 8
  for (size_t st = 0; st < a.stages.size(); ++st) {
    EXPECT_NEAR(b.stages[st].weights_bytes - a.stages[st].weights_bytes, 2.0 * layer, 2.0 * layer * 1e-3);
    EXPECT_NEAR(b.stages[st].gradients_bytes - a.stages[st].gradients_bytes, (2.0 + 4.0) * layer, 6.0 * layer * 1e-3);
    EXPECT_DOUBLE_EQ(b.stages[st].activations_bytes, a.stages[st].activations_bytes);
  }
  // Gradients accumulated unsharded until the last microbatch: no reduce-scatter input during the step's peak.
  plain.parallel.defer_gradient_sync = fsdp2.parallel.defer_gradient_sync = true;
  const auto c = estimate_memory(plain, derive_plan(plain), t);
  const auto d = estimate_memory(fsdp2, derive_plan(fsdp2), t);
  EXPECT_NEAR(d.stages[1].gradients_bytes - c.stages[1].gradients_bytes, 2.0 * layer, 2.0 * layer * 1e-3);
  // Held gathered (no resharding after forward), forward's implicit prefetch allocates the next layer's flat output
  // while the previous one's is still referenced: two outputs in the pool, not one.
  plain.parallel.reshard_after_forward = fsdp2.parallel.reshard_after_forward = true;
  auto held_plain = plain, held_fsdp2 = fsdp2;
  held_plain.parallel.reshard_after_forward = held_fsdp2.parallel.reshard_after_forward = false;
  const auto e = estimate_memory(held_plain, derive_plan(held_plain), t);
  const auto f = estimate_memory(held_fsdp2, derive_plan(held_fsdp2), t);
  EXPECT_NEAR(f.stages[1].weights_bytes - e.stages[1].weights_bytes, 2.0 * 2.0 * layer, 4.0 * layer * 1e-3);
  // Without ZeRO-3 there is no FSDP2 gather.
  auto zero1 = fsdp2;
  zero1.parallel.zero = 1;
  auto zero1_plain = zero1;
  zero1_plain.stack.memory.fsdp_layer_buffers = false;
  EXPECT_DOUBLE_EQ(estimate_memory(zero1, derive_plan(zero1), t).stages[1].total_bytes(),
                   estimate_memory(zero1_plain, derive_plan(zero1_plain), t).stages[1].total_bytes());
}

// FSDP2's sharded gradients live in its reduce-scatter stream's pool, reserved from one step to the next: with the
// reduction deferred to the last microbatch (torch pipelining), the stage's sharded fp32 gradients are reserved beside
// the unsharded ones at the peak; reduced every step, they are counted already and nothing moves.
TEST(MemoryAsHeld, Fsdp2GradientPoolKeepsTheShardedGradientsReserved)
{
  auto plain = fsdp2_pipelined_gpt3_175b();
  auto pool = plain;
  pool.stack.memory.fsdp_gradient_pool = true;
  dtsim::model::Transformer t(plain.model);
  const auto plan = derive_plan(plain);
  const auto a = estimate_memory(plain, plan, t);
  const auto b = estimate_memory(pool, derive_plan(pool), t);
  for (size_t st = 0; st < a.stages.size(); ++st) {
    const double params = stage_params(t, plan, int64_t(st));
    EXPECT_NEAR(b.stages[st].gradients_bytes - a.stages[st].gradients_bytes, params / 2.0 * 4.0, params * 1e-9);
    EXPECT_DOUBLE_EQ(b.stages[st].weights_bytes, a.stages[st].weights_bytes);
    EXPECT_DOUBLE_EQ(b.stages[st].activations_bytes, a.stages[st].activations_bytes);
  }
  // Interleaved, two chunks per stage: every chunk's sharded gradients are reserved throughout, beside the unsharded
  // gradients of the chunk in its backward passes (stage 1 holds layers only: half its parameters unsharded).
  auto interleaved = pool;
  interleaved.parallel.vpp = 2;
  interleaved.schedule = "interleaved-1f1b";
  interleaved.training.recompute = Recompute::Full;
  const auto plan2 = derive_plan(interleaved);
  const double params1 = stage_params(t, plan2, 1);
  EXPECT_NEAR(estimate_memory(interleaved, plan2, t).stages[1].gradients_bytes,
              (params1 / 2.0 + params1 / 2.0) * 4.0, params1 * 1e-9);
  // Reduced every step: the sharded gradients are counted already.
  auto every_step = plain, every_step_pool = pool;
  every_step.parallel.defer_gradient_sync = every_step_pool.parallel.defer_gradient_sync = false;
  EXPECT_DOUBLE_EQ(estimate_memory(every_step, derive_plan(every_step), t).stages[1].total_bytes(),
                   estimate_memory(every_step_pool, derive_plan(every_step_pool), t).stages[1].total_bytes());
}

// PyTorch FSDP keeps the sharded parameter in fp32 alone, Adam's master copy, and casts it to 16 bits for each
// all-gather (FSDP2's FSDPParam.all_gather_inputs, FSDP1's _mp_shard): no 16-bit shard, 2 bytes per sharded
// parameter fewer; one layer's cast shards (the all-gather's inputs) counted once, in the gather's stream pool.
TEST(MemoryAsHeld, FsdpHoldsTheFp32ShardAloneAndOneLayersCast)
{
  auto with_copy = fsdp2_pipelined_gpt3_175b();
  with_copy.stack.memory.fsdp_layer_buffers = true;
  with_copy.stack.memory.fsdp_gradient_pool = true;
  auto fp32_only = with_copy;
  fp32_only.stack.memory.fsdp_fp32_shard_only = true;
  dtsim::model::Transformer t(with_copy.model);
  const auto plan = derive_plan(with_copy);
  const auto a = estimate_memory(with_copy, plan, t);
  const auto b = estimate_memory(fp32_only, derive_plan(fp32_only), t);
  const double layer = t.layer_params_per_rank(8, 1, false, 1);
  for (size_t st = 0; st < a.stages.size(); ++st) {
    const double shard = stage_params(t, plan, int64_t(st)) / 2.0;  // zero 3 over dp 2
    EXPECT_NEAR(a.stages[st].weights_bytes - b.stages[st].weights_bytes, 2.0 * shard - 2.0 * layer / 2.0,
                1e-9 * shard);
    EXPECT_DOUBLE_EQ(b.stages[st].optimizer_bytes, a.stages[st].optimizer_bytes);  // the fp32 master, kept
    EXPECT_DOUBLE_EQ(b.stages[st].gradients_bytes, a.stages[st].gradients_bytes);
    EXPECT_DOUBLE_EQ(b.stages[st].activations_bytes, a.stages[st].activations_bytes);
  }
  // Gathered in fp8 (torchao's fsdp_pre_all_gather casts the fp32 shard to float8): the cast is one byte a parameter.
  auto fp8_copy = with_copy, fp8_only = fp32_only;
  for (auto* s : {&fp8_copy, &fp8_only}) {
    s->training.precision = "fp8";
    s->training.fp8_params = true;
    s->stack.memory.fp8_saves_16bit = true;
  }
  const double shard1 = stage_params(t, plan, 1) / 2.0;
  EXPECT_NEAR(estimate_memory(fp8_copy, derive_plan(fp8_copy), t).stages[1].weights_bytes -
                  estimate_memory(fp8_only, derive_plan(fp8_only), t).stages[1].weights_bytes,
              2.0 * shard1 - layer / 2.0, 1e-9 * shard1);
  // Without an fp32 master among Adam's states, or without ZeRO-3's sharded weights, the rule does not apply.
  auto bf16_states = with_copy, bf16_states_only = fp32_only;
  bf16_states.training.optimizer_state = bf16_states_only.training.optimizer_state = OptimizerState::Bf16;
  auto zero1 = with_copy, zero1_only = fp32_only;
  zero1.parallel.zero = zero1_only.parallel.zero = 1;
  for (const auto& [off, on] : {std::pair{bf16_states, bf16_states_only}, std::pair{zero1, zero1_only}})
    EXPECT_DOUBLE_EQ(estimate_memory(on, derive_plan(on), t).stages[1].total_bytes(),
                     estimate_memory(off, derive_plan(off), t).stages[1].total_bytes());
}

// Weights gathered in fp8 (training.fp8_params under fp8; torchao's float8 all-gather, torchtitan's
// enable_fsdp_float8_all_gather) are held gathered in fp8: FSDP2 keeps the gathered uint8 data as the Float8Tensor
// weight. One byte less per gathered layer weight, on every layer held gathered and in the all-gather buffer; the
// embedding, the shards, the gradients and the optimizer states do not move.
TEST(MemoryAsHeld, Fp8AllGatherHoldsTheGatheredLayersInFp8)
{
  auto bf16_gather = gpt3_175b_at_precision("fp8");
  bf16_gather.parallel.zero = 3;
  bf16_gather.parallel.dp = 2;
  bf16_gather.devices = 128;
  bf16_gather.parallel.reshard_after_forward = false;
  bf16_gather.stack.memory.fp8_saves_16bit = true;
  bf16_gather.stack.memory.fsdp_layer_buffers = true;
  bf16_gather.stack.memory.fp32_gradients = true;
  auto fp8_gather = bf16_gather;
  fp8_gather.training.fp8_params = true;
  dtsim::model::Transformer t(bf16_gather.model);
  const auto plan = derive_plan(bf16_gather);
  const auto a = estimate_memory(bf16_gather, plan, t);
  const auto b = estimate_memory(fp8_gather, derive_plan(fp8_gather), t);
  const double layer = t.layer_params_per_rank(8, 1, false, 1);
  // Stage 1 holds layers only: its whole stage gathered, and two layers' all-gather buffers (forward's prefetch).
  const double stage1 = stage_params(t, plan, 1);
  EXPECT_NEAR(a.stages[1].weights_bytes - b.stages[1].weights_bytes, stage1 + 2.0 * layer, 1e-9 * stage1);
  // Stage 0 holds as many layers and the word embeddings besides, gathered in 16-bit: the same saving.
  ASSERT_GT(stage_params(t, plan, 0), stage1);
  EXPECT_NEAR(a.stages[0].weights_bytes - b.stages[0].weights_bytes, stage1 + 2.0 * layer, 1e-9 * stage1);
  for (size_t st = 0; st < a.stages.size(); ++st) {
    EXPECT_DOUBLE_EQ(b.stages[st].gradients_bytes, a.stages[st].gradients_bytes);
    EXPECT_DOUBLE_EQ(b.stages[st].optimizer_bytes, a.stages[st].optimizer_bytes);
    EXPECT_DOUBLE_EQ(b.stages[st].activations_bytes, a.stages[st].activations_bytes);
  }
  // Resharding after forward: the layer computed, the one prefetched and the buffer.
  bf16_gather.parallel.reshard_after_forward = fp8_gather.parallel.reshard_after_forward = true;
  EXPECT_NEAR(estimate_memory(bf16_gather, derive_plan(bf16_gather), t).stages[1].weights_bytes -
                  estimate_memory(fp8_gather, derive_plan(fp8_gather), t).stages[1].weights_bytes,
              3.0 * layer, 1e-9 * layer);
  // MXFP8 weights are gathered in 16-bit.
  auto mx = bf16_gather, mx_params = fp8_gather;
  mx.training.precision = mx_params.training.precision = "mxfp8";
  EXPECT_DOUBLE_EQ(estimate_memory(mx, derive_plan(mx), t).stages[1].weights_bytes,
                   estimate_memory(mx_params, derive_plan(mx_params), t).stages[1].weights_bytes);
}

// torch's tensor parallelism under sequence parallelism saves a column-parallel linear's input as gathered: a layer's
// QKV and fc1 inputs whole on every rank (2 bytes each, 1 under torchao float8, which casts before the gather)
// instead of their tp-th share, and the output layer's 16-bit input whole beside the loss's buffers.
TEST(MemoryAsHeld, TorchTensorParallelSavesGatheredInputs)
{
  const double sbh = 2048.0 * 1.0 * 12288.0;  // seq * micro_batch * hidden, elements
  auto plain = gpt3_175b_at_precision("bf16");
  plain.training.recompute = Recompute::Full;
  auto torch_tp = plain;
  torch_tp.stack.memory.tp_saves_gathered_inputs = true;
  dtsim::model::Transformer t(plain.model);
  // Stage 1 (layers only) recomputes one layer whole during its backward: two inputs of 2 bytes whole, not / 8.
  auto stage1 = [&](const ScenarioSpec& s) {
    return estimate_memory(s, derive_plan(s), t).stages[1].activations_bytes;
  };
  EXPECT_NEAR(stage1(torch_tp) - stage1(plain), (2.0 * 2.0 - 2.0 * 2.0 / 8.0) * sbh, 1e-9 * sbh);
  // torchao float8 (16-bit inputs saved where no gather casts them): the gathered inputs are its 1-byte ones.
  auto plain_fp8 = plain, torch_fp8 = torch_tp;
  plain_fp8.training.precision = torch_fp8.training.precision = "fp8";
  plain_fp8.stack.memory.fp8_saves_16bit = torch_fp8.stack.memory.fp8_saves_16bit = true;
  EXPECT_NEAR(stage1(torch_fp8) - stage1(plain_fp8), (2.0 * 1.0 - 2.0 * 2.0 / 8.0) * sbh, 1e-9 * sbh);
  // The head's stage under selective recomputation (no layer recomputed whole, so the loss's buffers are its extra):
  // every stored layer of the microbatch in flight gains the same, and the output layer's input is held whole.
  auto sel_plain = plain, sel_torch = torch_tp;
  sel_plain.training.recompute = sel_torch.training.recompute = Recompute::Selective;
  const auto a = estimate_memory(sel_plain, derive_plan(sel_plain), t);
  const auto b = estimate_memory(sel_torch, derive_plan(sel_torch), t);
  const auto& last_a = a.stages.back();
  const double layers = 96.0 / 8.0;
  EXPECT_NEAR(b.stages.back().activations_bytes - last_a.activations_bytes,
              double(last_a.microbatches_in_flight) * layers * 3.5 * sbh + 2.0 * sbh, 1e-9 * sbh);
  // Without sequence parallelism every rank holds the whole input anyway: nothing changes.
  auto no_sp = plain, no_sp_torch = torch_tp;
  no_sp.parallel.sp = no_sp_torch.parallel.sp = false;
  EXPECT_DOUBLE_EQ(stage1(no_sp_torch), stage1(no_sp));
}

// torchtitan's final RMSNorm runs eager: autograd keeps the fp32 copy of its input and its 16-bit normalised output
// (6 bytes per element of its sequence-sharded input) with the loss's buffers, on the head's stage alone.
TEST(MemoryAsHeld, EagerFinalNormIsHeldWithTheLoss)
{
  // selective recomputation: no layer recomputed whole, the loss's moment is the peak
  auto plain = gpt3_175b_at_precision("bf16");
  auto eager_norm = plain;
  eager_norm.stack.memory.final_norm_bytes_per_element = 6;
  dtsim::model::Transformer t(plain.model);
  const auto a = estimate_memory(plain, derive_plan(plain), t);
  const auto b = estimate_memory(eager_norm, derive_plan(eager_norm), t);
  const double norm_input = 2048.0 * 1.0 * 12288.0 / 8.0;  // seq * micro_batch * hidden / tp (sequence parallel)
  EXPECT_NEAR(b.stages.back().activations_bytes - a.stages.back().activations_bytes, 6.0 * norm_input,
              1e-9 * norm_input);
  for (size_t st = 0; st + 1 < a.stages.size(); ++st)
    EXPECT_DOUBLE_EQ(b.stages[st].activations_bytes, a.stages[st].activations_bytes) << "stage " << st;
  // Without sequence parallelism the norm's input is every token's, on every tp rank.
  auto no_sp = plain, no_sp_norm = eager_norm;
  no_sp.parallel.sp = no_sp_norm.parallel.sp = false;
  const auto c = estimate_memory(no_sp, derive_plan(no_sp), t);
  const auto d = estimate_memory(no_sp_norm, derive_plan(no_sp_norm), t);
  EXPECT_NEAR(d.stages.back().activations_bytes - c.stages.back().activations_bytes, 6.0 * 8.0 * norm_input,
              1e-9 * norm_input);
}

// torch.distributed.pipelining's last stage keeps every microbatch's output, its 16-bit logits (the rank's vocabulary
// share), until the step ends: at the last microbatch's loss, the logits of the 7 microbatches before it.
TEST(MemoryAsHeld, PipeliningLastStageKeepsEveryMicrobatchsLogits)
{
  auto plain = gpt3_175b_at_precision("bf16");
  auto torch_pp = plain;
  torch_pp.stack.memory.pipeline_keeps_logits = true;
  dtsim::model::Transformer t(plain.model);
  const auto a = estimate_memory(plain, derive_plan(plain), t);
  const auto b = estimate_memory(torch_pp, derive_plan(torch_pp), t);
  const double logits = 2048.0 * 1.0 * double(plain.model.vocab) / 8.0 * 2.0;  // tokens * vocab / tp, bf16
  EXPECT_NEAR(b.stages.back().activations_bytes - a.stages.back().activations_bytes, 7.0 * logits, logits * 1e-9);
  for (size_t st = 0; st + 1 < a.stages.size(); ++st)
    EXPECT_DOUBLE_EQ(b.stages[st].activations_bytes, a.stages[st].activations_bytes) << "stage " << st;
  // Without pipeline parallelism the loss runs outside any schedule (torchtitan deletes the logits before backward).
  auto one_stage = torch_pp;
  one_stage.parallel.pp = 1;
  one_stage.devices = 8;
  auto one_stage_plain = one_stage;
  one_stage_plain.stack.memory.pipeline_keeps_logits = false;
  EXPECT_DOUBLE_EQ(estimate_memory(one_stage, derive_plan(one_stage), t).stages[0].activations_bytes,
                   estimate_memory(one_stage_plain, derive_plan(one_stage_plain), t).stages[0].activations_bytes);
}

// torch.distributed.pipelining's step() concatenates the loss stage's logits of every microbatch when the step ends
// (memory.pipeline_merges_outputs), one request larger than any before it: mapped in the first step, when Adam has
// not yet made its moments, it raises the stage's reservation to its peak less the moments plus the merged logits.
TEST(MemoryAsHeld, PipeliningMergedLogitsOutgrowTheFirstStepsPeak)
{
  EXPECT_EQ(dtsim::stack::optimizer_moment_bytes(OptimizerState::Fp32), 8);
  EXPECT_EQ(dtsim::stack::optimizer_moment_bytes(OptimizerState::Fp32Remainders), 8);
  EXPECT_EQ(dtsim::stack::optimizer_moment_bytes(OptimizerState::Bf16), 4);
  // FSDP over 16 ranks, micro batch 16: the merged logits outgrow the last stage's sharded moments.
  auto plain = fsdp2_pipelined_gpt3_175b();
  plain.parallel.dp = 16;
  plain.devices = 1024;
  plain.training.micro_batch = 16;
  plain.training.global_batch = 16 * 8 * 16;
  auto merging = plain;
  merging.stack.memory.pipeline_merges_outputs = true;
  dtsim::model::Transformer t(plain.model);
  const auto plan = derive_plan(plain);
  const auto a = estimate_memory(plain, plan, t);
  const auto b = estimate_memory(merging, derive_plan(merging), t);
  const double merged = 8.0 * 16.0 * 2048.0 * double(plain.model.vocab) / 8.0 * 2.0;  // microbatches x bf16 logits
  const double moments = stage_params(t, plan, 7) / 16.0 * 8.0;                         // fp32 momentum and variance
  ASSERT_GT(merged, moments);
  EXPECT_NEAR(b.stages.back().activations_bytes - a.stages.back().activations_bytes, merged - moments, merged * 1e-9);
  for (size_t st = 0; st + 1 < a.stages.size(); ++st)
    EXPECT_DOUBLE_EQ(b.stages[st].total_bytes(), a.stages[st].total_bytes()) << "stage " << st;
  // FSDP over 2 ranks: the moments outweigh the merged logits, and the peak stands.
  auto few_shards = plain, few_shards_merging = merging;
  few_shards.parallel.dp = few_shards_merging.parallel.dp = 2;
  few_shards.devices = few_shards_merging.devices = 128;
  few_shards.training.global_batch = few_shards_merging.training.global_batch = 16 * 8 * 2;
  EXPECT_DOUBLE_EQ(estimate_memory(few_shards_merging, derive_plan(few_shards_merging), t).peak_bytes(),
                   estimate_memory(few_shards, derive_plan(few_shards), t).peak_bytes());
  // Two microbatches: the merge is no larger than the loss's fp32 copy of one microbatch's logits, whose freed
  // segment can hold it.
  auto two = plain, two_merging = merging;
  two.microbatches = two_merging.microbatches = 2;
  two.training.global_batch = two_merging.training.global_batch = 16 * 2 * 16;
  EXPECT_DOUBLE_EQ(estimate_memory(two_merging, derive_plan(two_merging), t).peak_bytes(),
                   estimate_memory(two, derive_plan(two), t).peak_bytes());
}

// The walk over a stage's order: a chunk holds gradients from its first weight-gradient pass to its last.
TEST(MemoryAsHeld, DeferredGradientPeakWalksTheOrder)
{
  using dtsim::scenario::StageUnit;
  auto f = [](int64_t c, int64_t mb) { return StageUnit{c, mb, false}; };
  auto b = [](int64_t c, int64_t mb) { return StageUnit{c, mb, true}; };
  // Two chunks, two microbatches, every forward first, chunk 1's backwards before chunk 0's.
  const std::vector<StageUnit> order = {f(0, 0), f(0, 1), f(1, 0), f(1, 1), b(1, 0), b(1, 1), b(0, 0), b(0, 1)};
  // Gradients much larger than activations: the peak is chunk 1's first backward, four in flight, chunk 1 only.
  auto p = dtsim::parallel::deferred_gradient_peak(order, 2, 1.0, {100.0, 100.0});
  EXPECT_EQ(p.in_flight, 4);
  EXPECT_EQ(p.chunk_holds, (std::vector<bool>{false, true}));
  EXPECT_EQ(p.chunk_reduced, (std::vector<bool>{false, false}));
  // A small chunk 1 and a large chunk 0: the peak moves to chunk 0's first backward, chunk 1 reduced by then.
  p = dtsim::parallel::deferred_gradient_peak(order, 2, 1.0, {100.0, 1.0});
  EXPECT_EQ(p.in_flight, 2);
  EXPECT_EQ(p.chunk_holds, (std::vector<bool>{true, false}));
  EXPECT_EQ(p.chunk_reduced, (std::vector<bool>{false, true}));
  // Backwards of the two chunks interleaved: both hold gradients at once.
  const std::vector<StageUnit> mixed = {f(0, 0), f(0, 1), f(1, 0), f(1, 1), b(1, 0), b(0, 0), b(1, 1), b(0, 1)};
  p = dtsim::parallel::deferred_gradient_peak(mixed, 2, 1.0, {100.0, 100.0});
  EXPECT_EQ(p.chunk_holds, (std::vector<bool>{true, true}));
  EXPECT_EQ(p.in_flight, 3);
  EXPECT_THROW(dtsim::parallel::deferred_gradient_peak(order, 2, 1.0, {1.0}), std::logic_error);
  // What each backward keeps to the step's end (here chunk 1's: its input's gradient) counts from the unit after it:
  // at chunk 0's first backward both of chunk 1's are kept, and they move the peak there.
  p = dtsim::parallel::deferred_gradient_peak(order, 2, 1.0, {100.0, 100.0}, {0.0, 60.0});
  EXPECT_EQ(p.in_flight, 2);
  EXPECT_DOUBLE_EQ(p.kept_after_backward_bytes, 120.0);
  EXPECT_EQ(p.chunk_holds, (std::vector<bool>{true, false}));
  // Kept sizes must come one per chunk.
  EXPECT_THROW(dtsim::parallel::deferred_gradient_peak(order, 2, 1.0, {1.0, 1.0}, {1.0}), std::logic_error);
}

// FSDP2 under interleaved 1F1B with gradient reduction deferred to each chunk's last backward (torch pipelining): with
// microbatches = pp every backward of a stage's later chunk runs before the first of its earlier chunk, whose
// gradients do not exist yet when the later chunk's begin: the peak holds one chunk's unsharded gradients of two.
TEST(MemoryAsHeld, Fsdp2DeferredGradientsAreHeldChunkByChunk)
{
  auto s = fsdp2_pipelined_gpt3_175b();
  s.parallel.vpp = 2;
  s.schedule = "interleaved-1f1b";
  s.training.recompute = Recompute::Full;
  dtsim::model::Transformer t(s.model);
  const auto plan = derive_plan(s);
  const auto r = estimate_memory(s, plan, t);
  // Stage 1 holds layers only: half its parameters' fp32 gradients, every chunk-microbatch in flight.
  const double params = stage_params(t, plan, 1);
  EXPECT_NEAR(r.stages[1].gradients_bytes, params / 2.0 * 4.0, params * 1e-9);
  EXPECT_EQ(r.stages[1].microbatches_in_flight, plan.schedule->in_flight(1, 8, 2, 8));
  // Every stage holds less than the sum of all its chunks' gradients.
  for (size_t st = 0; st < r.stages.size(); ++st)
    EXPECT_LT(r.stages[st].gradients_bytes, stage_params(t, plan, int64_t(st)) * 4.0) << "stage " << st;
  // Plain 1F1B (one chunk): every gradient of the stage from its first backward on.
  auto one_chunk = s;
  one_chunk.parallel.vpp = 1;
  one_chunk.schedule = "1f1b";
  const auto plan1 = derive_plan(one_chunk);
  EXPECT_NEAR(estimate_memory(one_chunk, plan1, t).stages[1].gradients_bytes, stage_params(t, plan1, 1) * 4.0,
              params * 1e-9);
}

}  // namespace

// PyTorch's experimental context parallelism (stack kernels.context_parallel: torch-allgather): a layer's attention
// backward holds every cp rank's K, V (16-bit, repeated to the query's heads), grad_query in fp32 and the fp32 dK,
// dV sent and received round the ring, once the layer's MLP activations are freed.
TEST(MemoryAsHeld, TorchContextParallelHoldsTheGatheredKeysAndValues)
{
  auto s = dtsim::scenario::load_scenario(
      dtsim::test::source_path("scenarios/validation/torchtitan-2412-llama31-405b-512-cp8.yaml"), {});
  ASSERT_TRUE(s.stack.context_parallel_allgather);
  dtsim::model::Transformer t(s.model);
  const auto plan = derive_plan(s);
  // 405B at seq 262,144, cp 8, tp 8: 32,768 tokens per rank, 128 heads of 128 over 8 ranks: 16 heads each.
  const double x = 32768.0 * 16.0 * 128.0 * 2.0;  // one rank's 16-bit Q (and K, V after repeat_kv), bytes
  const double ring = dtsim::parallel::context_parallel_attention_bytes(s.model, plan.shape);
  EXPECT_NEAR(ring, 8.0 * 2.0 * x + 2.0 * x + 2.0 * 4.0 * x, 1e-9 * ring);
  // It grows with the cp group: the gathered K, V is the whole sequence's.
  auto cp2 = s;
  cp2.parallel.cp = 2;
  cp2.parallel.dp = 4;
  cp2.training.seq_len = 65536;
  cp2.training.global_batch = 32;
  EXPECT_NEAR(dtsim::parallel::context_parallel_attention_bytes(cp2.model, derive_plan(cp2).shape),
              2.0 * 2.0 * x + 2.0 * x + 2.0 * 4.0 * x, 1e-9 * ring);
  // The first stage (full recomputation) peaks at the larger of the whole layer and its attention backward.
  auto ring_stack = s, megatron_ring = s;
  megatron_ring.stack.context_parallel_allgather = false;
  auto first = [&](const ScenarioSpec& sc) {
    return estimate_memory(sc, derive_plan(sc), t).stages[0].activations_bytes;
  };
  const double layer = dtsim::parallel::layer_activation_bytes(s.model, plan.shape, false);
  const double mlp = dtsim::parallel::layer_mlp_activation_bytes(s.model, plan.shape);
  ASSERT_GT(ring, mlp);
  ASSERT_LT(mlp, layer);
  EXPECT_NEAR(first(ring_stack) - first(megatron_ring), ring - mlp, 1e-9 * ring);
  // Without context parallelism nothing is held.
  auto no_cp = s;
  no_cp.parallel.cp = 1;
  no_cp.parallel.dp = 8;
  no_cp.training.seq_len = 32768;
  no_cp.training.global_batch = 64;
  EXPECT_DOUBLE_EQ(dtsim::parallel::context_parallel_attention_bytes(no_cp.model, derive_plan(no_cp).shape), 0.0);
}
