#include "scenario/scenario_keys.hpp"

#include "scenario/scenario_spec.hpp"
#include "scenario/schedule_registry.hpp"
#include "stack/stack_spec.hpp"

namespace dtsim::scenario::keys {

using namespace config::declaring;

const Key kName = Key::string("name", kOptional, "the file name", "shown in reports");
const Key kDescription = Key::string("description", kOptional, "none", "free text");
const Key kModel = Key::string("model", kRequired, "", "model file (YAML or Hugging Face config.json)");
const Key kHardware = Key::string("hardware", kRequired, "", "hardware file");
const Key kStack =
    Key::string("stack", kOptional, "the hardware file's `default_stack`",
                "the software stack (hardware/stacks/*.yaml, relative to the scenario); `none`: no stack at all");
const Key kDevices =
    Key::integer("devices", limits::kDevices, kRequired, "", "devices used; must equal dp * tp * pp (see Ranges)")
        .defaults_to(1);
const Key kParallel =
    Key::section("parallel", kOptional, "the parallel plan; may be left out: tp 1, pp 1, dp = devices");
const Key kTp = Key::integer("tp", limits::kPlanSize, kOptional, "",
                             "tensor-parallel size; divides heads, KV heads, hidden and intermediate sizes")
                    .defaults_to(1);
const Key kPp =
    Key::integer("pp", limits::kPlanSize, kOptional, "", "pipeline stages; pp * vpp divides the layer count")
        .defaults_to(1);
const Key kVpp = Key::integer("vpp", limits::kVirtualStages, kOptional, "",
                              "model chunks per stage; >= 2 only with `interleaved-1f1b`, exactly 2 with `zb-v`")
                     .defaults_to(1);
const Key kDp = Key::integer("dp", limits::kPlanSize, kOptional, "devices / (tp * pp * cp)", "data-parallel size");
const Key kSp =
    Key::boolean("sp", kOptional, "false", "sequence parallelism (reduce-scatter + all-gather instead of all-reduce)");
const Key kDpOverlap =
    Key::boolean("dp_overlap", kOptional, "the stack's `overlap.dp_overlap`, else true",
                 "gradient all-reduce in buckets overlapped with backward (PyTorch DDP); false: one all-reduce "
                 "after backward (Megatron's local DDP)");
const Key kDpBucket = Key::quantity("dp_bucket", Dimension::Bytes, limits::kBucket, kOptional, "",
                                    "bucket size (PyTorch DDP's bucket_cap_mb default)")
                          .defaults_to(25.0 * 1048576);
const Key kPpOverlap =
    Key::boolean("pp_overlap", kOptional,
                 "the stack's `overlap.pp_overlap_by_schedule` entry for the schedule, else its "
                 "`overlap.pp_overlap`, else false",
                 "pipeline sends and receives overlap computation; false: Megatron-LM's default, each stage posts "
                 "its sends and receives in one batch between units and waits for all of them (a transfer starts "
                 "when both sides have posted it)");
const Key kExpertTp =
    Key::integer("expert_tp", limits::kPlanSize, kOptional, "tp",
                 "expert tensor parallelism (Megatron-Core's `--expert-tensor-parallel-size`): `tp`, each expert's"
                 " matrices split over the TP ranks, which all-gather the routed tokens before the experts and "
                 "reduce-scatter them after; or 1, each expert whole on every rank: the expert-parallel group "
                 "takes `ep` consecutive ranks of the stage, TP ranks first (tp divides ep, and ep divides tp * dp"
                 " * cp), each rank dispatches its own sequence-parallel tokens (needs `sp: true`) and no TP "
                 "collective runs around the experts; the ranks holding the same experts are the tp * dp * cp / ep"
                 " others. Megatron-Bridge's MoE recipes use 1");
const Key kEpOverlap =
    Key::boolean("ep_overlap", kOptional, "true under `dualpipe`, false under `interleaved-1f1b`",
                 "under a schedule that pairs a forward and a backward chunk (`dualpipe`'s F&B; "
                 "`interleaved-1f1b`'s steady state, Megatron-Core's combined 1F1B with `--overlap-moe-expert-"
                 "parallel-comm`, off by default there): the pair runs as one, its kernels taking the GPU one "
                 "chunk at a time while the other chunk's expert all-to-alls (and its ZeRO-3 gathers) are in "
                 "flight; TP collectives stay in their chunk's compute stream; the pair starts once both of its "
                 "inputs have arrived (with blocking exchanges: its group's); an all-to-all beside the other "
                 "chunk's kernels takes 20 of `device.sm_count` SMs from them (DeepSeek-V3 report, Sec. 3.2.2). "
                 "false: the chunks run one after the other. `true` under a schedule without pairs is refused");
const Key kParamGatherOverlap = Key::boolean(
    "param_gather_overlap", kOptional, "the stack's `overlap.param_gather_overlap` under zero 1 and 2, else false",
    "ZeRO 1 and 2: the all-gather of the updated parameters runs at the start of the next step, every"
    " gather issued at once in the order the first microbatch's forward needs them, each layer "
    "waiting for its own parameters (Megatron-LM's `--overlap-param-gather`, off by default) instead "
    "of after the optimizer. Simulated in the steady state: the step starts with the previous step's "
    "gathers");
const Key kReshardAfterForward = Key::boolean(
    "reshard_after_forward", kOptional, "true",
    "ZeRO 3 only: false keeps each layer's gathered parameters from its forward to its backward, so the backward "
    "gathers nothing and the rank holds the gathered weights of its whole stage (PyTorch FSDP2's "
    "`fully_shard(reshard_after_forward=False)`, which torchtitan sets under pipeline parallelism); true "
    "gathers them again before the backward (FSDP's default)");
const Key kDeferGradientSync = Key::boolean(
    "defer_gradient_sync", kOptional, "false",
    "ZeRO 2 and 3 only: true accumulates the gradients unsharded over the microbatches and reduce-scatters them "
    "after the last microbatch's backward only, holding the stage's gradients whole (FSDP2's "
    "`set_requires_gradient_sync(False)` on every microbatch but the last, as torch.distributed.pipelining's "
    "stages call it); false reduce-scatters them on every microbatch");
const Key kStageLayers =
    Key::integer_list("stage_layers", limits::kChunkLayers, kOptional, "an even split",
                      "layers of each pipeline stage, or of each model chunk with vpp > 1 (pp * vpp entries, in the "
                      "model's order: chunk c of stage i is entry c * pp + i, under `zb-v` entries i and 2 pp - 1 - i),"
                      " summing to the model's layers; for published runs that give the first and "
                      "last stages fewer layers to balance the embedding and the head. Without it, pp * vpp must divide"
                      " the layers. `dtsim search` keeps it only for the scenario's own pp and vpp");
const Key kTpAsyncAllreduce =
    Key::boolean("tp_async_allreduce", kOptional, "the stack's `overlap.tp_async_allreduce`, else true",
                 "without sequence parallelism, a column-parallel layer's input-gradient all-reduce runs beside "
                 "its weight-gradient GEMM (Megatron-LM's asynchronous all-reduce, default since late 2021; "
                 "Transformer Engine's `Linear`); false: after both GEMMs (Megatron-LM 2021, Megatron-DeepSpeed) "
                 "(docs/parallelism.md)");
const Key kTpOverlap =
    Key::boolean("tp_overlap", kOptional,
                 "the stack's `overlap.tp_overlap` where sp is on and the device gives `sm_count`, else false",
                 "tensor-parallel communication overlapped with the GEMMs next to it (Megatron-LM's `--tp-comm-"
                 "overlap` with Transformer Engine, off by default); needs `sp: true`. Each all-gather runs beside"
                 " the compute step that consumes it and each reduce-scatter beside the one that produces it, one "
                 "collective at a time on the TP communicator; the step goes on when both the GPU and the "
                 "collectives are done. While a collective runs, the compute beside it gives up the SMs of its "
                 "kernels (Transformer Engine's defaults: 1 for an all-gather, 16 for a reduce-scatter, of "
                 "`device.sm_count`), which the hardware file must then give (docs/parallelism.md)");
const Key kUbProjFpropMethod =
    Key::choice("ub_proj_fprop_method", model::ub_method_names(), kOptional, "",
                "with `tp_overlap`: how userbuffers overlap the attention projection's forward reduce-scatter with "
                "its GEMM (ub_cfg `proj_fprop` `method`): `pipeline`, Transformer Engine's default, the GEMM in 4 "
                "chunks, each reduce-scattered by a userbuffers kernel on `ub_proj_fprop_sms` SMs, the last after "
                "the GEMM; `ring_exchange`, tp chunks of M / tp rows, each chunk's partial sent by copy engine to the"
                " rank that owns it while the next runs, the rank's own chunk last, then a reduction kernel sums the"
                " tp partials (CommOverlapP2PBase::split_overlap_rs, docs/parallelism.md)")
        .defaults_to("pipeline");
const Key kUbFc2FpropMethod =
    Key::choice("ub_fc2_fprop_method", model::ub_method_names(), kOptional, "",
                "with `tp_overlap`: the same for a dense MLP's second GEMM (ub_cfg `fc2_fprop` `method`)")
        .defaults_to("pipeline");
const Key kUbProjFpropSms =
    Key::number("ub_proj_fprop_sms", 1, 1024, kOptional, "16 (`pipeline`), 1 (`ring_exchange`)",
                "with `tp_overlap`: the SMs of the attention projection's forward reduce-scatter (userbuffers "
                "`proj_fprop` `num_sm`; Transformer Engine's defaults 16 and 1, module/base.py initialize_ub). A "
                "ring exchange's sends run on the copy engines: its SMs count only under its SM margin. A recipe "
                "with its own userbuffers configuration states it (docs/parallelism.md)");
const Key kUbFc2FpropSms =
    Key::number("ub_fc2_fprop_sms", 1, 1024, kOptional, "16 (`pipeline`), 1 (`ring_exchange`)",
                "with `tp_overlap`: the same for a dense MLP's second GEMM (userbuffers `fc2_fprop` `num_sm`)");
const Key kUbProjFpropSmMargin =
    Key::boolean("ub_proj_fprop_sm_margin", kOptional, "the stack's `overlap.ub_sm_margin`, else false",
                 "with `tp_overlap`: userbuffers `proj_fprop` `set_sm_margin`: every chunk GEMM of the attention "
                 "projection runs on `device.sm_count` less `ub_proj_fprop_sms` SMs for its whole length "
                 "(UbufCommOverlap's `_math_sms`, transformer_engine/pytorch/csrc/comm_gemm_overlap.h), the "
                 "reduce-scatter on the SMs it leaves; false: the GEMM runs on every SM and gives the reduce-scatter"
                 " its SMs only while it runs");
const Key kUbFc2FpropSmMargin =
    Key::boolean("ub_fc2_fprop_sm_margin", kOptional, "the stack's `overlap.ub_sm_margin`, else false",
                 "with `tp_overlap`: the same for a dense MLP's second GEMM (userbuffers `fc2_fprop`)");
const Key kEp =
    Key::integer("ep", limits::kPlanSize, kOptional, "",
                 "expert parallelism for models with `num_local_experts`: each layer's experts are split over ep "
                 "ranks carved out of the data-parallel ranks (with `cp` > 1, of the dp * cp ranks, cp ranks "
                 "first; ep divides dp * cp and the expert count), Megatron-Core style. With tp > 1 it needs `sp: "
                 "true`. Per MoE layer and microbatch: the router scores the rank's own tokens, an all-to-all over"
                 " the ep group sends the top-k copies to their experts (and one brings them back, in forward and "
                 "in backward), the TP ranks all-gather/reduce-scatter the routed tokens around the expert GEMMs "
                 "(one grouped GEMM per local expert set). Expert gradients are reduced (and, with ZeRO, their "
                 "states and under ZeRO-3 their weights sharded and gathered) over the dp * cp / ep ranks that "
                 "hold the same experts")
        .defaults_to(1);
const Key kMoePreprocessGraphed =
    Key::boolean("moe_preprocess_graphed", kOptional, "false",
                 "under `moe_dispatcher: alltoall`: a CUDA graph covers the MoE router and preprocessing "
                 "(Megatron-Core's cuda_graph_scope holds `moe_preprocess`), so the dispatcher copies its splits to "
                 "the host after the token permutation and the GPU idles for the stack's `host.sync_resume` once "
                 "per MoE layer forward; false: the copy runs beside the permutation, which hides that much of it "
                 "(docs/parallelism.md)");
const Key kMoeDispatcher =
    Key::choice("moe_dispatcher", model::token_dispatcher_names(), kOptional, "",
                "how the expert all-to-all sends a token to the ranks of its top-k experts (docs/parallelism.md): "
                "`alltoall`, Megatron-Core's default (moe_token_dispatcher_type \"alltoall\"), every routed copy "
                "on its own; `deepep` (DeepSeek's DeepEP, moe_flex_dispatcher_backend \"deepep\") and `hybridep` "
                "(NVIDIA's HybridEP, \"hybridep\"), a token once per destination node between scale-up domains, "
                "which cuts the bytes between them (0.45 of alltoall's with 8 experts per token over 4 nodes; "
                "sim/model/node_limited_routing.hpp); the NVLink forwarding inside the node is not modelled; every "
                "dispatcher waits on the host for its token counts once per MoE layer forward, the GPU idling for "
                "the stack's `host.sync_resume` (the flex dispatchers whole, `alltoall` as "
                "`parallel.moe_preprocess_graphed` says)")
        .defaults_to("alltoall");
const Key kCp =
    Key::integer("cp", limits::kPlanSize, kOptional, "",
                 "context parallelism: each sequence split over cp ranks (2 * cp must divide `seq_len`, Megatron's"
                 " load-balanced causal split); dp * tp * pp * cp = devices, and dp is derived as devices / (tp * "
                 "pp * cp) when left out. The cp ranks sit between tp and dp (Megatron's order); gradients are "
                 "reduced and ZeRO shards over dp * cp ranks. Per layer, keys and values go round the cp ring (a "
                 "ring all-gather in forward; gather plus reduce of their gradients, an all-reduce's traffic, in "
                 "backward), overlapped with the attention block next to it; what the attention does not hide is "
                 "`exposed_cp_comm_s`. With `ep` > 1 the expert-parallel ranks are carved out of the dp * cp ranks"
                 " (Megatron-Core)")
        .defaults_to(1);
const Key kZero =
    Key::integer("zero", limits::kZeroStage, kOptional, "",
                 "ZeRO stage over the data-parallel group (needs dp > 1). 1: optimizer states sharded (Megatron-"
                 "LM's distributed optimizer): gradients reduce-scattered instead of all-reduced, each rank "
                 "updates 1/dp of the parameters, then the updated 16-bit parameters are all-gathered. 2: "
                 "gradients sharded too, so they are reduce-scattered on every microbatch, not only the last. 3: "
                 "weights sharded too (FSDP): each layer's parameters are all-gathered before its forward and "
                 "again before its backward, the next layer's gather prefetched; nothing gathered after the "
                 "optimizer. All on the same data-parallel communicator, one collective at a time")
        .defaults_to(0);
const Key kSchedule =
    Key::choice("schedule", schedule_names(), kOptional, "",
                "pipeline schedule; interleaved needs microbatches per pipeline to be a multiple of pp; zb-h1 and"
                " zb-h2 (zero bubble, Qi et al. 2024) split each backward into input and weight gradients; zb-v"
                " does too over two chunks per stage placed in a V (vpp 2), the first stage holding the embedding "
                "and the loss; "
                "dualpipe (DeepSeek-V3) feeds microbatches from both ends, needs an even pp and an even count of "
                "at least 2 pp microbatches per pipeline, and holds two copies of the layers "
                "(docs/parallelism.md). The names, options, stage orders and held activations come from one "
                "registry (sim/scenario/schedule_registry.hpp)")
        .defaults_to(kDefaultSchedule);
const Key kTraining = Key::section("training", kRequired, "the batch, the sequence, the precision and the kernels");
const Key kGlobalBatch =
    Key::integer("global_batch", limits::kGlobalBatch, kRequired, "", "samples per step; multiple of dp * micro_batch")
        .defaults_to(1);
const Key kMicroBatch =
    Key::integer("micro_batch", limits::kMicroBatch, kOptional,
                 "required on GPU clusters; `auto` on wafer-scale hardware",
                 "samples per microbatch; `auto` (wafer-scale only): the largest divisor of each system's batch "
                 "that fits in on-wafer SRAM, as the Cerebras compiler picks it (docs/wafer.md)")
        .or_auto();
const Key kSeqLen =
    Key::integer("seq_len", limits::kSeqLen, kRequired, "", "tokens per sample; at most max_position_embeddings")
        .defaults_to(1);
const Key kExpertImbalance =
    Key::number("expert_imbalance", 1.0, 1e6, kOptional, "",
                "models with experts: tokens routed to the busiest expert relative to the mean. The busiest "
                "expert-parallel rank (that expert and its experts / ep - 1 neighbours at the mean) then gets 1 +"
                " (imbalance - 1) * ep / experts times the mean tokens, which lengthens its expert GEMMs, "
                "activations and all-to-alls (the step waits for it; every rank is modelled as that rank); a rank"
                " holding every expert sees no imbalance")
        .defaults_to(1.0);
const Key kExpertCapacityFactor =
    Key::number("expert_capacity_factor", 1.0, 1e6, kOptional, "none (dropless)",
                "models with experts: each expert takes at most this many times the mean tokens and drops the "
                "rest before dispatch (Megatron-Core's `--moe-expert-capacity-factor`): the busiest expert's load"
                " is min(imbalance, capacity factor), in its GEMMs, activations and all-to-alls. Padding to "
                "capacity is not modelled")
        .defaults_to(0);
const Key kFlashAttention =
    Key::boolean("flash_attention", kOptional, "true when the stack names a fused attention kernel, else false",
                 "fused attention (FlashAttention, Dao et al. 2022): the scores, softmax and dropout never reach "
                 "memory (no 5as/(ht) activation term, no softmax and dropout kernels); the kernel is timed as its"
                 " GEMMs, and backward recomputes the scores (one more GEMM, counted in hardware FLOPs). Off: the "
                 "unfused attention of Megatron-LM 2021-2022, which the Megatron and Korthikanti validations use");
const Key kPrecision =
    Key::choice("precision", {"bf16", "fp16", "fp8", "mxfp8", "nvfp4", "fp32"}, kOptional, "",
                "compute precision; needs a `peak_flops` entry. fp8 (Transformer Engine style, H100): the linear "
                "layers' GEMMs (QKV, projection, MLP, experts) take 1-byte inputs and run at the fp8 peak with "
                "the device's fp8 curve (device.efficiency.gemm_fp8, required); attention, router and "
                "logits GEMMs run at the bf16 peak (a bf16 entry is required); an fp8 copy of the weights (1 B/param)"
                " is held besides the bf16 weights; gradients, optimizer states and communication stay as in bf16. "
                "mxfp8 and nvfp4 (Blackwell; Transformer Engine's MXFP8BlockScaling and NVFP4BlockScaling recipes, "
                "docs/precisions.md): the same linear GEMMs at the device's mxfp8 or nvfp4 peak on their own curve "
                "(device.efficiency.gemm_mxfp8 or gemm_nvfp4, required), block-scaled casts writing row- and "
                "column-wise copies, both kept for the weights (2.0625 or 1.125 B/param); a device without the "
                "peak refuses the precision. MFU is reported against the peak of the chosen precision")
        .defaults_to("bf16");
const Key kRecompute = Key::choice("recompute", {"none", "selective", "full"}, kOptional, "",
                                   "activation recomputation (Korthikanti et al. 2022)")
                           .defaults_to("none");
const Key kRecomputeLayers =
    Key::integer("recompute_layers", limits::kLayers, kOptional, "all layers",
                 "with `recompute: full`, recompute only the first N layers of each model chunk and keep every "
                 "activation of the others (Megatron-LM's `--recompute-method block --recompute-num-layers N`); at"
                 " most the layers of the largest chunk. Memory: a recomputed layer keeps its input, the others "
                 "all of Korthikanti's per-layer activations; time and hardware FLOPs: one forward per recomputed "
                 "layer. where full recomputation fits, `dtsim search` recomputes only the fewest layers per chunk"
                 " that fit (recomputing more only adds time)")
        .defaults_to(0);
const Key kSavedActivations =
    Key::choice("saved_activations", {"layer", "torchtitan-op"}, kOptional, "",
                "memory only: what each layer keeps for backward. `layer`: Korthikanti's per-layer activations, "
                "or the layer's input where `recompute` recomputes it; `torchtitan-op`: torchtitan's per-op selective "
                "checkpointing (activation_checkpoint.selective_ac_option \"op\"), every layer keeping its input, "
                "the outputs of every second mm by count (wq, wv, w1, w2), those of scaled_dot_product_attention "
                "and of the reduce-scatters, and recomputing the rest in its backward. Its recomputed FLOPs stay "
                "those `recompute: full` and `recompute_layers` give (the scenario chooses the equivalent layers); "
                "needs `recompute: full`, a model without experts or latent attention")
        .defaults_to("layer");
const Key kFp8Recipe = Key::choice(
    "fp8_recipe", stack::fp8_recipe_names(), kOptional, "the stack's `kernels.fp8_recipe` (delayed without one)",
    "fp8 only: Transformer Engine's scaling recipe; current scaling reads each cast tensor once more "
    "for its amax, and the layernorm in front of QKV and fc1 then writes 16-bit (its fp8 cast stays "
    "separate)");
const Key kCrossEntropy =
    Key::choice("cross_entropy", stack::cross_entropy_names(), kOptional,
                "the stack's `kernels.cross_entropy` (unfused without one)",
                "the kernels of the loss over the vocabulary-parallel logits, in bytes per logit forward / "
                "backward (16-bit logits): `unfused`, Megatron-LM's vocab_parallel_cross_entropy, one PyTorch "
                "kernel per operation on an fp32 copy, 38 / 14; `fused-native`, Megatron-Core's "
                "`cross_entropy_loss_fusion` (native), 22 / 10; `fused-te`, Transformer Engine's Triton "
                "parallel_cross_entropy (`cross_entropy_fusion_impl: te`), 6 / 4");
const Key kOptimizerState =
    Key::choice("optimizer_state", stack::optimizer_state_names(), kOptional,
                "the stack's `memory.optimizer_state` (fp32 without one)",
                "how Adam holds its states per parameter (memory only): `fp32`, an fp32 master copy, momentum and "
                "variance, 12 bytes; `fp32-remainders`, the master copy's low 16 bits only (its high 16 are the "
                "bf16 weight), 10 bytes (Apex DistributedFusedAdam's store_param_remainders: NeMo with a bf16 "
                "model and fp32 optimizer); `bf16`, bf16 momentum and variance and no master copy, 4 bytes (NeMo's "
                "`optim.dtype: bf16`). With precision fp32 the weights are the master copy: 8 or 4 bytes");
const Key kFp8Params =
    Key::boolean("fp8_params", kOptional, "false",
                 "fp8, mxfp8 and nvfp4 only: the linear layers' weights are held in the low precision alone, "
                 "without their 16-bit copy (Megatron-LM's `--fp8-param-gather`, NeMo's `fp8_params`, "
                 "Megatron-Bridge's `fp8_param_gather`, Transformer Engine's quantized model init); the fp32 master "
                 "copy stays in the optimizer. Under fp8 the data-parallel gathers move the layers' weights in fp8, "
                 "one byte each (Megatron-Core's uint8 parameter buffer; torchao's float8 all-gather under FSDP2, "
                 "torchtitan's `enable_fsdp_float8_all_gather`), and ZeRO-3 holds them gathered in fp8; mxfp8 weights "
                 "are gathered in 16-bit and cast after the gather (reuse_grad_buf_for_mxfp8_param_ag); nvfp4 weights "
                 "(Megatron-Core's `fp4_param`, Megatron-Bridge's `fp4_param_gather`) are gathered as their packed "
                 "data, half a byte each");
const Key kFp8NormAmax =
    Key::boolean("fp8_norm_amax", kOptional, "false",
                 "fp8 with `fp8_recipe: current` only: the norm in front of QKV and fc1 takes the amax of its output "
                 "inside its own kernel, so the fp8 cast of that tensor reads it once instead of twice (Transformer "
                 "Engine 2.8 on: rmsnorm_fwd and layernorm_fwd's FUSED_NORM_AMAX_FP8 path, "
                 "pytorch/csrc/extensions/normalization.cpp, then Float8CurrentScalingQuantizer::quantize_with_amax). "
                 "TE takes that path unless NVTE_NORM_FWD_USE_CUDNN is set, which Megatron-Bridge's performance "
                 "launcher keeps for some runs (scripts/performance/perf_plugins.py); false: the norm writes 16-bit "
                 "and the cast takes its own amax pass");
const Key kGradAccumulationFusion =
    Key::boolean("grad_accumulation_fusion", kOptional, "true",
                 "weight-gradient GEMMs accumulate into the fp32 main gradients; false: a separate accumulation "
                 "kernel per microbatch (Megatron-LM with fp16 gradients)");
const Key kTokens =
    Key::quantity("tokens", Dimension::Count, limits::kTrainingTokens, kOptional, "none: no time to train",
                  "tokens of the whole training run, such as `15T`: every run then reports its time to train, "
                  "with failures, checkpoints and restarts (`resilience`; docs/time-to-train.md)");
const Key kResilience = Key::section("resilience", kOptional,
                                     "failures and checkpoints of the whole run (with `training.tokens`); each "
                                     "value left out is the kind of system's assumption (docs/time-to-train.md)");
const Key kCheckpointInterval =
    Key::quantity("checkpoint_interval", Dimension::Time, limits::kRunTime, kOptional,
                  "Young-Daly: sqrt(2 x write time x the job's MTBF)", "training time between checkpoints");
const Key kCheckpoint = Key::choice("checkpoint", {"sync", "async"}, kOptional, "",
                                    "sync: training stops while a checkpoint is written; async: it goes on, and a "
                                    "failure loses the checkpoint still being written")
                            .defaults_to("sync");
const Key kCheckpointBandwidth =
    Key::quantity("checkpoint_bandwidth", Dimension::Bandwidth, limits::kBandwidth, kOptional, "the system's",
                  "storage write bandwidth of one host (or wafer system); all write at once");
const Key kRestart = Key::quantity("restart", Dimension::Time, limits::kRunTime, kOptional, "the system's",
                                   "from a failure to training again: detection, rescheduling, reloading");
const Key kDeviceMtbf = Key::quantity("device_mtbf", Dimension::Time, limits::kMtbf, kOptional, "the system's",
                                      "mean time between failures of one device (GPU or wafer system)");
const Key kHostMtbf = Key::quantity("host_mtbf", Dimension::Time, limits::kMtbf, kOptional, "the system's",
                                    "mean time between failures of one host, for what fails outside the devices");
const Key kPlacement = Key::section("placement", kOptional, "where the job's devices lie on the hardware");
const Key kSegment =
    Key::integer("segment", limits::kPlanSize, kOptional,
                 "every node of the domain (the hardware file's `scale_up.nodes`)",
                 "GPU clusters: nodes of each scale-up (NVLink) domain the job holds, as Slurm's `--segment N` asks; "
                 "the job fills that many nodes of a domain before the next, and its tp, cp and ep groups fit in "
                 "domains of that size. At most the domain's nodes. Megatron-Bridge's launcher asks 16 on GB200 NVL72 "
                 "racks of 18 trays for a job of more than 18 trays (its largest divisor of the tray count up to 18: "
                 "scripts/performance/utils/executors.py at v0.4.2)");
const Key kSimulation = Key::section("simulation", kOptional, "how the step is simulated");
const Key kFidelity = Key::choice("fidelity", {"folded", "full"}, kOptional, "",
                                  "one device per stage (one system on wafer-scale hardware), or every device")
                          .defaults_to("folded");
const Key kVariability = Key::section("variability", kOptional,
                                      "GPU clusters: per-device speed differences and per-kernel jitter, drawn from a "
                                      "seed; synchronizing collectives and pipeline hand-offs wait for their "
                                      "slowest member (docs/variability.md)");
const Key kDeviceSpread =
    Key::number("device_spread", 0.0, 0.5, kOptional, "",
                "coefficient of variation of a device's speed across the job's devices (log-normal, mean 1), drawn "
                "once per device and step; 0.015 is Sinha et al. SC'22's V100 clusters (docs/variability.md)")
        .defaults_to(0);
const Key kKernelJitter =
    Key::number("kernel_jitter", 0.0, 0.5, kOptional, "",
                "coefficient of variation of one kernel's time (log-normal, mean 1), drawn per kernel and device; a "
                "run of kernels between two collectives varies as their sum")
        .defaults_to(0);
const Key kSamples = Key::integer("samples", limits::kSamples, kOptional, "",
                                  "steps drawn (`dtsim run --samples`); the report gives their mean as the step "
                                  "time and their 5th, 50th and 95th percentiles")
                         .defaults_to(1);
const Key kSeed = Key::integer("seed", limits::kSeed, kOptional, "",
                               "seed of the draws (`dtsim run --seed`): the same seed, the same steps, byte for byte")
                      .defaults_to(1);
const Key kWafer = Key::section("wafer", kOptional, "wafer-scale hardware only");
const Key kWaferMode =
    Key::choice("mode", {"auto", "weight-streaming", "layer-pipelined"}, kOptional, "",
                "wafer-scale hardware only: how the model runs (docs/wafer.md); auto keeps the modes that fit and"
                " simulates the faster")
        .defaults_to("auto");

std::vector<config::KeyGroup> groups()
{
  return {{"", {&kName, &kDescription, &kModel, &kHardware, &kStack, &kDevices}},
          {"parallel",
           {&kTp, &kPp, &kDp, &kVpp, &kSp, &kDpOverlap, &kDpBucket, &kPpOverlap, &kExpertTp, &kEpOverlap,
            &kParamGatherOverlap, &kReshardAfterForward, &kDeferGradientSync, &kStageLayers, &kTpAsyncAllreduce,
            &kTpOverlap, &kUbProjFpropMethod, &kUbFc2FpropMethod, &kUbProjFpropSms, &kUbFc2FpropSms,
            &kUbProjFpropSmMargin, &kUbFc2FpropSmMargin, &kEp, &kMoeDispatcher, &kMoePreprocessGraphed, &kCp, &kZero}},
          {"", {&kSchedule}},
          {"training",
           {&kGlobalBatch, &kMicroBatch, &kSeqLen, &kExpertImbalance, &kExpertCapacityFactor, &kFlashAttention,
            &kPrecision, &kRecompute, &kRecomputeLayers, &kSavedActivations, &kFp8Recipe, &kCrossEntropy,
            &kOptimizerState, &kFp8Params, &kFp8NormAmax, &kGradAccumulationFusion, &kTokens}},
          {"resilience",
           {&kCheckpointInterval, &kCheckpoint, &kCheckpointBandwidth, &kRestart, &kDeviceMtbf, &kHostMtbf}},
          {"placement", {&kSegment}},
          {"simulation", {&kFidelity}},
          {"variability", {&kDeviceSpread, &kKernelJitter, &kSamples, &kSeed}},
          {"wafer", {&kWaferMode}}};
}

}  // namespace dtsim::scenario::keys
