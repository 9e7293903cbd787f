#include "stack/stack_keys.hpp"

#include "stack/stack_spec.hpp"

namespace dtsim::stack::keys {

using namespace config::declaring;

const Key kName = Key::string("name", kRequired, "", "what the stack is, in reports");
const Key kFramework = Key::string("framework", kOptional, "", "the framework it describes");
const Key kVersion = Key::string("version", kOptional, "", "the framework's version");
const Key kDescription = Key::string("description", kOptional, "", "free text, not read");
const Key kNccl = Key::string("nccl", kRequired, "",
                              "the NCCL release the stack's runs used, as its release notes or container list it: "
                              "`X.Y.Z`, `X.Y.Z+` where only a lower bound is published, or `unpublished`; it decides "
                              "the algorithms NCCL's tuner can choose (PAT from 2.23.4) and how it models them (the "
                              "ring's LL at a quarter or a third before 2.21 and LL128 at 0.7 with one GPU per node "
                              "before 2.23, the NVLS tree's bandwidth from 2.28.3, its network latency from 2.28.9); "
                              "`unpublished` takes the algorithms and NVLS tree of the releases before 2.23 and the "
                              "ring's protocols of 2.23");

const Key kKernels = Key::section("kernels", kOptional, "the kernels the framework runs");
const Key kAttention = Key::choice("attention", {"unfused", "flash-attention-2", "flash-attention-3", "cudnn"},
                                   kOptional, "", "the fused attention kernel; when not `unfused`, "
                                   "`training.flash_attention` defaults to true").defaults_to("unfused");
const Key kFp8Recipe = Key::choice("fp8_recipe", fp8_recipe_names(), kOptional, "",
                                   "Transformer Engine's scaling (current adds an amax pass): the default of "
                                   "`training.fp8_recipe`").defaults_to("delayed");
const Key kCrossEntropy = Key::choice("cross_entropy", cross_entropy_names(), kOptional, "",
                                      "the loss kernels: the default of `training.cross_entropy`")
                              .defaults_to("unfused");
const Key kCudaGraphs = Key::boolean("cuda_graphs", kOptional, "false", "true: no per-kernel host launch");
const Key kUbGatherCopy =
    Key::boolean("ub_gather_copy", kOptional, "false",
                 "true: each userbuffers ring-exchange all-gather (QKV's and fc1's inputs, the attention projection's "
                 "and fc2's output gradients) first copies the rank's rows into the buffer on the compute stream "
                 "(Transformer Engine 2.x fill_userbuffers_buffer_for_all_gather, CommOverlapP2P::copy_into_buffer); "
                 "false: the producing kernel writes into the buffer (1.8)");
const Key kLossAllReduce = Key::choice("loss_all_reduce", {"per_microbatch", "none"}, kOptional, "",
                                       "the loss reported for logging, all-reduced over the data-parallel group "
                                       "after each microbatch's forward on the last stage (Megatron-LM's "
                                       "pretrain_gpt.py loss_func), or not every step (torchtitan)")
                               .defaults_to("per_microbatch");
const Key kZeroGradients =
    Key::choice("zero_gradients", {"reduce-scatter", "all-reduce"}, kOptional, "",
                "the collective that reduces a gradient bucket under ZeRO stages 1 and 2 (`parallel.zero` 1-2): "
                "`reduce-scatter`, each rank receives its shard; `all-reduce`, every rank receives the whole bucket "
                "and keeps its shard, twice the bytes (DeepSpeed's stage_1_and_2.py average_tensor with "
                "use_multi_rank_bucket_allreduce, its default: allreduce_and_scatter -> dist.all_reduce); ZeRO 3 "
                "reduce-scatters either way")
        .defaults_to("reduce-scatter");
const Key kOptimizerStepBytes =
    Key::number("optimizer_step_bytes", 0, 256, kOptional, "",
                "bytes the optimizer step's memory-bound kernels move per parameter a rank updates; 0: Megatron-LM's "
                "54 (fp32 main gradient copy 6, unscale and inf/nan check 8, norm 4, fused Adam 28, copy to 16-bit "
                "6, zeroing 2: replay/step_program.hpp)")
        .defaults_to(0);
const Key kContextParallel =
    Key::choice("context_parallel", {"ring", "torch-allgather"}, kOptional, "",
                "how attention runs under context parallelism (`parallel.cp` > 1): `ring`, Megatron-LM / Transformer "
                "Engine's ring attention, each step's K, V sent to the next rank beside the attention on the block "
                "already there; `torch-allgather`, PyTorch's experimental context parallelism of December 2024 "
                "(torch/distributed/tensor/experimental/_attention.py) as torchtitan runs it under torch.compile: "
                "the K, V of every rank all-gathered before the attention and waited for at once, one attention "
                "kernel per K, V block, partial outputs merged in fp32 after each, and in backward dK, dV passed "
                "round the ring in fp32 after each block, every collective waited for at once; its memory: the "
                "gathered K, V, fp32 grad_query and the fp32 dK, dV in flight, held during a layer's attention "
                "backward (sim/parallel/memory.cpp, context_parallel_attention_bytes; `ring`: none counted)")
        .defaults_to("ring");
const Key kTpOverlapKernels =
    Key::choice("tp_overlap", {"userbuffers", "torch-micro-pipeline"}, kOptional, "",
                "how `parallel.tp_overlap` runs: `userbuffers`, Transformer Engine's (Megatron-LM's "
                "--tp-comm-overlap), every all-gather beside the kernels that consume it and every reduce-scatter "
                "beside those that produce it; `torch-micro-pipeline`, PyTorch's async tensor parallelism of December "
                "2024 as torchtitan runs it (Inductor's micro_pipeline_tp pass over "
                "torch/distributed/_symmetric_memory): only an all-gather whose result feeds linear GEMMs and a "
                "forward reduce-scatter of one GEMM's output are fused, each with that GEMM alone, split into tp "
                "chunks whose p2p copies run on the copy engines; the shard's copy into the symmetric buffer before "
                "a gather and the reduction of the stacked partials after a reduce-scatter are kernels of their own; "
                "the backward reduce-scatter of a sum of input gradients is not fused (as without tp_overlap)")
        .defaults_to("userbuffers");

const Key kHost = Key::section("host", kOptional, "host time: a run of kernels takes at least its launches");
const Key kLaunch = Key::quantity("launch", Dimension::Time, limits::kLatency, kOptional, "", "per kernel launch")
                        .defaults_to(0);
const Key kPerLayer = Key::quantity("per_layer", Dimension::Time, limits::kLatency, kOptional, "", "per layer")
                          .defaults_to(0);
const Key kPerMicrobatch = Key::quantity("per_microbatch", Dimension::Time, limits::kLatency, kOptional, "",
                                         "per microbatch").defaults_to(0);
const Key kSyncResume =
    Key::quantity("sync_resume", Dimension::Time, limits::kLatency, kOptional, "",
                  "from a host synchronisation's return to the next kernel's start (one eager operator's dispatch): "
                  "the GPU idles for it where the host waits on the GPU with nothing queued behind (Megatron-Core's "
                  "`alltoall` token dispatcher, once per MoE layer forward; docs/parallelism.md)")
        .defaults_to(0);
const Key kExpertGemm =
    Key::quantity("expert_gemm", Dimension::Time, limits::kLatency, kOptional, "",
                  "host time per expert GEMM a grouped linear layer issues one by one (Transformer Engine's "
                  "GroupedLinear as a loop of cuBLASLt calls); charged under CUDA graphs too, since dropless experts "
                  "are never captured; a run of kernels takes at least its launches (docs/parallelism.md)")
        .defaults_to(0);

const Key kMemory = Key::section("memory", kOptional, "what the framework holds beside the model");
const Key kCudaContext = Key::quantity("cuda_context", Dimension::Bytes, limits::kReserved, kOptional, "",
                                       "the CUDA context and library handles, on every device").defaults_to(0);
const Key kNcclBuffers = Key::quantity("nccl_buffers", Dimension::Bytes, limits::kReserved, kOptional, "",
                                       "NCCL buffers per communicator; a rank joins one communicator per parallel "
                                       "group of more than one rank (tp, cp, pp, dp, and with experts ep and the "
                                       "experts' data-parallel group); the report prints the count").defaults_to(0);
const Key kFragmentation = Key::number("fragmentation", 0.0, 0.5, kOptional, "",
                                       "fraction of the device memory the caching allocator cannot hand out; a plan "
                                       "fits when its peak is at most capacity * (1 - fragmentation)").defaults_to(0);
const Key kFp32Gradients = Key::boolean("fp32_gradients", kOptional, "false",
                                        "true: gradients are held and reduced over the data-parallel group in fp32 "
                                        "(Megatron-LM's main_grad under bf16): 4 bytes per gradient in memory and in "
                                        "the reduce-scatter / all-reduce");

const Key kOptimizerState =
    Key::choice("optimizer_state", optimizer_state_names(), kOptional, "",
                "how Adam holds its states per parameter: `fp32` (fp32 master copy, momentum and variance, 12 "
                "bytes), `fp32-remainders` (the master copy's low 16 bits only, 10 bytes: Apex "
                "DistributedFusedAdam's store_param_remainders, NeMo's default under bf16), `bf16` (bf16 momentum "
                "and variance, no master copy, 4 bytes): the default of `training.optimizer_state`")
        .defaults_to("fp32");

const Key kFp8Saves16bit =
    Key::boolean("fp8_saves_16bit", kOptional, "false",
                 "true: fp8 linear layers save their 16-bit inputs and weights for backward and cast them again "
                 "there, keeping no fp8 copy between forward and backward or across microbatches (torchao's "
                 "Float8Linear); false: Transformer Engine's, which keep the low-precision inputs and a weight copy");

const Key kPipelineKeepsStageOutputs =
    Key::boolean("pipeline_keeps_stage_outputs", kOptional, "false",
                 "true: a pipeline stage keeps each microbatch's output tensor from its forward to its backward "
                 "(torch.distributed.pipelining's fwd_cache): one sequence-sharded layer input per microbatch in "
                 "flight on every stage but the model's last chunk; false: the output's data is freed once sent "
                 "(Megatron-LM's deallocate_pipeline_outputs)");

const Key kPipelineRecvBuffers =
    Key::boolean("pipeline_recv_buffers", kOptional, "false",
                 "true: a pipeline stage allocates its receive buffers once per microbatch and keeps them across "
                 "steps (torch.distributed.pipelining's _prepare_forward_infra / _prepare_backward_infra): one "
                 "sequence-sharded layer input per microbatch for the gradients of every chunk but the model's last, "
                 "and for the activations of every chunk but the model's first (those of microbatches in flight are "
                 "the first layer's saved input, counted once); false: buffers live only while in use");
const Key kPipelineKeepsLogits =
    Key::boolean("pipeline_keeps_logits", kOptional, "false",
                 "true: the pipeline stage that computes the loss keeps every microbatch's output, the 16-bit "
                 "logits (the rank's vocabulary share), until the step ends (torch.distributed.pipelining's "
                 "output_chunks, merged for step()'s return value and emptied when the next step begins): at the "
                 "last microbatch's loss, the logits of every earlier one; false: an output is freed after its "
                 "backward");
const Key kPipelineKeepsInputGrads =
    Key::boolean("pipeline_keeps_input_grads", kOptional, "false",
                 "true: a pipeline stage keeps the gradient of every received input its backward has made (one "
                 "sequence-sharded layer input per backward run, on every chunk but the model's first) until the "
                 "next step begins (torch.distributed.pipelining before 2025-10: autograd accumulates it into the "
                 "receive buffer's .grad, reset only by clear_runtime_states); false: freed once sent");
const Key kPipelineKeepsOutputsToStepEnd =
    Key::boolean("pipeline_keeps_outputs_to_step_end", kOptional, "false",
                 "true: every pipeline stage keeps each microbatch's output (one sequence-sharded layer input per "
                 "forward run, on every chunk but the one that computes the loss) until the next step begins, not "
                 "only until its backward (torch.distributed.pipelining before 2025-05: forward_one_chunk appended "
                 "every stage's output to output_chunks, emptied only by clear_runtime_states; pytorch/pytorch#153383 "
                 "kept it on the last stage alone); false: an output is freed after its backward");
const Key kPipelineMergesOutputs =
    Key::boolean("pipeline_merges_outputs", kOptional, "false",
                 "true: when a step ends, the pipeline stage that computes the loss concatenates every microbatch's "
                 "logits into one new tensor while it still holds them (torch.distributed.pipelining's step() "
                 "returns _merge_outputs(output_chunks), a torch.cat, before pytorch/pytorch#165822 made it "
                 "optional), and the caching allocator without expandable segments maps it a segment of its own "
                 "in the first step, before Adam has made its moments: the stage's reserved memory is at least its "
                 "peak less the moments plus the merged logits; false: no merge counted");
const Key kFsdpLayerBuffers =
    Key::boolean("fsdp_layer_buffers", kOptional, "false",
                 "true (FSDP2, parallel.zero 3): besides the gathered weights, one layer's flat all-gather output "
                 "cached in the all-gather copy-in stream's pool of the caching allocator (two when the layers stay "
                 "gathered after forward, parallel.reshard_after_forward false: forward's implicit prefetch "
                 "allocates the next output before it frees the previous), one layer's 16-bit "
                 "unsharded gradients as autograd produces them and, when gradients are reduced every step, the "
                 "previous layer's reduce-scatter input in the reduce dtype (held until the next layer's "
                 "post-backward); false: none counted");
const Key kFsdpGradientPool =
    Key::boolean("fsdp_gradient_pool", kOptional, "false",
                 "true (FSDP2, parallel.zero 3): the sharded gradients, which FSDP2 allocates in its reduce-scatter "
                 "stream, stay reserved in that stream's pool of the caching allocator after the optimizer step "
                 "frees them, so the stage's sharded gradients count at its peak also when their reduction waits for "
                 "the last microbatch (parallel.defer_gradient_sync); false: counted only while allocated");

const Key kFsdpFp32ShardOnly =
    Key::boolean("fsdp_fp32_shard_only", kOptional, "false",
                 "true (PyTorch FSDP with a 16-bit param_dtype, parallel.zero 3, Adam's states in fp32): the "
                 "sharded parameter is the fp32 master copy alone, cast to 16 bits for each all-gather into a "
                 "buffer freed after it (FSDP2's FSDPParam.all_gather_inputs; FSDP1's FlatParameter _mp_shard), so "
                 "no 16-bit shard is held beside it: one layer's cast shards are counted, reserved in the gather's "
                 "stream pool; false: a 16-bit shard of the weights is held beside the fp32 master copy (DeepSpeed "
                 "ZeRO-3, Megatron-LM's distributed optimizer)");

const Key kTpSavesGatheredInputs =
    Key::boolean("tp_saves_gathered_inputs", kOptional, "false",
                 "true (torch's tensor parallelism on DTensor): under sequence parallelism a column-parallel "
                 "linear's input is all-gathered before it and autograd saves the gathered tensor, whole on every "
                 "tp rank (a layer's QKV and fc1 inputs; the output layer's input, held with the loss's buffers); "
                 "false: the rank's rows are saved and gathered again in backward (Megatron-LM)");

// The loss's peak, per logit a rank holds (its vocabulary shard of each token's logits), in bytes: 0 keeps dtsim's
// default, the 16-bit logits plus two fp32 copies (activation bytes + 8).
const Key kLossBytesPerLogit =
    Key::number("loss_bytes_per_logit", 0, 64, kOptional, "",
                "bytes per logit held at the loss's peak (forward or backward) with the vocabulary on one rank "
                "(tp 1); 0: the 16-bit logits and two fp32 copies (activation bytes + 8)")
        .defaults_to(0);
const Key kLossParallelBytesPerLogit =
    Key::number("loss_parallel_bytes_per_logit", 0, 64, kOptional, "",
                "the same with the vocabulary split over tp ranks (tp > 1: a vocabulary-parallel loss); 0: "
                "activation bytes + 8")
        .defaults_to(0);
// The final norm in front of the output layer, where it runs outside the compiled blocks (torchtitan): what autograd
// keeps of it for its backward, held with the loss's buffers.
const Key kFinalNormBytesPerElement =
    Key::number("final_norm_bytes_per_element", 0, 16, kOptional, "",
                "bytes per element of the final norm's input (the rank's tokens, sequence-sharded under sequence "
                "parallelism, times the hidden width) that autograd keeps for the norm's backward, held with the "
                "loss's buffers; 0: not counted")
        .defaults_to(0);

const Key kOverlap = Key::section("overlap", kOptional, "defaults of the scenario's `parallel.*` switches it does "
                                                        "not set");
const Key kTpOverlap = Key::boolean("tp_overlap", kOptional, "the scenario's default", "`parallel.tp_overlap`");
const Key kUbSmMargin =
    Key::boolean("ub_sm_margin", kOptional, "false",
                 "default of `parallel.ub_proj_fprop_sm_margin` and `parallel.ub_fc2_fprop_sm_margin`: the "
                 "Transformer Engine version's default `set_sm_margin` for a `pipeline` userbuffers layer (1.8: "
                 "`ub_cfg.get(\"set_sm_margin\", 0)` in module/base.py initialize_ub; 2.x: `not method == "
                 "\"ring_exchange\"` in its default configuration)");
const Key kDpOverlap = Key::boolean("dp_overlap", kOptional, "the scenario's default", "`parallel.dp_overlap`");
const Key kPpOverlap = Key::boolean("pp_overlap", kOptional, "the scenario's default", "`parallel.pp_overlap`");
const Key kPpOverlapBySchedule =
    Key::section("pp_overlap_by_schedule", kOptional,
                 "per schedule, `SCHEDULE: true|false`: the default of `parallel.pp_overlap` for scenarios that run "
                 "that schedule, before `pp_overlap` (PyTorch's Schedule1F1B and ScheduleInterleaved1F1B wait for "
                 "each batch of sends and receives, its GPipe does not); a name that is no schedule is an error");
const Key kParamGatherOverlap = Key::boolean("param_gather_overlap", kOptional, "the scenario's default",
                                             "`parallel.param_gather_overlap`");
const Key kTpAsyncAllreduce = Key::boolean("tp_async_allreduce", kOptional, "the scenario's default",
                                           "`parallel.tp_async_allreduce`");

// Factors multiply modelled speeds: 0.5 halves a throughput, 2 doubles it. Outside [0.05, 20] a factor no longer
// corrects a model, it replaces it.
const Key kFactors = Key::section("factors", kOptional, "efficiency factors fitted by `dtsim calibrate`");
const Key kCompute = Key::number("compute", 0.05, 20, kOptional, "", "multiplier of GEMM and attention throughput")
                         .defaults_to(1.0);
const Key kMemoryFactor = Key::number("memory", 0.05, 20, kOptional, "",
                                      "multiplier of memory-bound kernels' throughput").defaults_to(1.0);
const Key kCommunication = Key::number("communication", 0.05, 20, kOptional, "", "multiplier of link throughput")
                               .defaults_to(1.0);
const Key kStepOverhead = Key::quantity("step_overhead", Dimension::Time, limits::kStepOverhead, kOptional, "",
                                        "time added once per step").defaults_to(0);

const Key kCalibration = Key::section("calibration", kOptional, "written by `dtsim calibrate`");
const Key kCalibrationRuns = Key::integer("runs", limits::kCalibrationRuns, kOptional, "", "the runs fitted")
                                 .defaults_to(0);
const Key kHeldoutErrors = Key::number_list("heldout_errors", -0.99, 100, kOptional, "none",
                                            "relative step-time errors (simulated / measured - 1) of runs the fit did "
                                            "not see; they give the 90% interval `step_time_s * exp(+-1.645 * "
                                            "RMS(log(1 + e)))`");

std::vector<config::KeyGroup> groups()
{
  return {{"", {&kName, &kFramework, &kVersion, &kNccl, &kDescription}},
          {"kernels", {&kAttention, &kFp8Recipe, &kCrossEntropy, &kCudaGraphs, &kLossAllReduce, &kContextParallel,
                       &kTpOverlapKernels, &kZeroGradients, &kOptimizerStepBytes, &kUbGatherCopy}},
          {"host", {&kLaunch, &kPerLayer, &kPerMicrobatch, &kSyncResume, &kExpertGemm}},
          {"memory", {&kCudaContext, &kNcclBuffers, &kFragmentation, &kFp32Gradients, &kOptimizerState, &kFp8Saves16bit,
                      &kPipelineKeepsStageOutputs, &kPipelineRecvBuffers, &kPipelineKeepsLogits,
                      &kPipelineKeepsInputGrads, &kPipelineKeepsOutputsToStepEnd, &kPipelineMergesOutputs,
                      &kFsdpLayerBuffers, &kFsdpGradientPool, &kFsdpFp32ShardOnly, &kTpSavesGatheredInputs,
                      &kLossBytesPerLogit, &kLossParallelBytesPerLogit, &kFinalNormBytesPerElement}},
          {"overlap",
           {&kTpOverlap, &kDpOverlap, &kPpOverlap, &kPpOverlapBySchedule, &kParamGatherOverlap, &kTpAsyncAllreduce,
            &kUbSmMargin}},
          {"factors", {&kCompute, &kMemoryFactor, &kCommunication, &kStepOverhead}},
          {"calibration", {&kCalibrationRuns, &kHeldoutErrors}}};
}

}  // namespace dtsim::stack::keys
