#include "stack/stack_yaml.hpp"

#include "config/map_reader.hpp"
#include "hardware/hardware_yaml.hpp"
#include "stack/nccl_version.hpp"
#include "stack/stack_keys.hpp"

namespace dtsim::stack {

using config::MapReader;
namespace k = keys;

StackSpec load_stack(const std::string& path, Diagnostics& diag)
{
  StackSpec st;
  st.file = path;
  auto file = config::YamlFile::load(path, diag);
  if (!file.ok())
    return st;
  st.written_keys = file.key_paths();
  MapReader root(file, file.root(), "", diag);
  st.name = root.string(k::kName).value_or("");
  st.framework = root.string(k::kFramework).value_or("");
  st.version = root.string(k::kVersion).value_or("");
  if (const auto nccl = root.string(k::kNccl)) {
    st.nccl_version = nccl_version_code(*nccl);
    if (st.nccl_version < 0) {
      root.error(k::kNccl.name, "expected an NCCL release as X.Y.Z, X.Y.Z+ (that or later) or unpublished, got '" +
                                    *nccl + "'");
      st.nccl_version = 0;
    }
  }
  root.accept({k::kDescription.name});

  MapReader kernels = root.map(k::kKernels);
  const std::string a = kernels.choice(k::kAttention).value_or(k::kAttention.default_choice);
  st.attention = a == "flash-attention-2"   ? AttentionKernel::FlashAttention2
                 : a == "flash-attention-3" ? AttentionKernel::FlashAttention3
                 : a == "cudnn"             ? AttentionKernel::CuDnn
                                            : AttentionKernel::Unfused;
  st.attention_given = st.attention != AttentionKernel::Unfused;
  st.fp8_recipe = fp8_recipe_named(kernels.choice(k::kFp8Recipe).value_or(k::kFp8Recipe.default_choice));
  st.cross_entropy = cross_entropy_named(kernels.choice(k::kCrossEntropy).value_or(k::kCrossEntropy.default_choice));
  st.cuda_graphs = kernels.boolean(k::kCudaGraphs).value_or(false);
  st.ub_gather_copy = kernels.boolean(k::kUbGatherCopy).value_or(false);
  st.loss_all_reduce_per_microbatch =
      kernels.choice(k::kLossAllReduce).value_or(k::kLossAllReduce.default_choice) == "per_microbatch";
  st.context_parallel_allgather =
      kernels.choice(k::kContextParallel).value_or(k::kContextParallel.default_choice) == "torch-allgather";
  st.tp_overlap_micro_pipeline =
      kernels.choice(k::kTpOverlapKernels).value_or(k::kTpOverlapKernels.default_choice) == "torch-micro-pipeline";
  st.zero_gradients_all_reduce =
      kernels.choice(k::kZeroGradients).value_or(k::kZeroGradients.default_choice) == "all-reduce";
  st.optimizer_step_bytes = kernels.value(k::kOptimizerStepBytes);
  kernels.finish();

  MapReader host = root.map(k::kHost);
  st.host.launch_s = host.value(k::kLaunch);
  st.host.per_layer_s = host.value(k::kPerLayer);
  st.host.per_microbatch_s = host.value(k::kPerMicrobatch);
  st.host.sync_resume_s = host.value(k::kSyncResume);
  st.host.expert_gemm_s = host.value(k::kExpertGemm);
  host.finish();

  MapReader mem = root.map(k::kMemory);
  st.memory.cuda_context_bytes = mem.value(k::kCudaContext);
  st.memory.nccl_buffer_bytes = mem.value(k::kNcclBuffers);
  st.memory.fragmentation = mem.value(k::kFragmentation);
  st.memory.fp32_gradients = mem.boolean(k::kFp32Gradients).value_or(false);
  st.memory.fp8_saves_16bit = mem.boolean(k::kFp8Saves16bit).value_or(false);
  st.memory.pipeline_keeps_stage_outputs = mem.boolean(k::kPipelineKeepsStageOutputs).value_or(false);
  st.memory.pipeline_recv_buffers = mem.boolean(k::kPipelineRecvBuffers).value_or(false);
  st.memory.pipeline_keeps_logits = mem.boolean(k::kPipelineKeepsLogits).value_or(false);
  st.memory.pipeline_keeps_input_grads = mem.boolean(k::kPipelineKeepsInputGrads).value_or(false);
  st.memory.pipeline_keeps_outputs_to_step_end = mem.boolean(k::kPipelineKeepsOutputsToStepEnd).value_or(false);
  st.memory.pipeline_merges_outputs = mem.boolean(k::kPipelineMergesOutputs).value_or(false);
  st.memory.fsdp_layer_buffers = mem.boolean(k::kFsdpLayerBuffers).value_or(false);
  st.memory.fsdp_gradient_pool = mem.boolean(k::kFsdpGradientPool).value_or(false);
  st.memory.fsdp_fp32_shard_only = mem.boolean(k::kFsdpFp32ShardOnly).value_or(false);
  st.memory.tp_saves_gathered_inputs = mem.boolean(k::kTpSavesGatheredInputs).value_or(false);
  st.memory.loss_bytes_per_logit = mem.value(k::kLossBytesPerLogit);
  st.memory.loss_parallel_bytes_per_logit = mem.value(k::kLossParallelBytesPerLogit);
  st.memory.final_norm_bytes_per_element = mem.value(k::kFinalNormBytesPerElement);
  st.memory.optimizer_state =
      optimizer_state_named(mem.choice(k::kOptimizerState).value_or(k::kOptimizerState.default_choice));
  mem.finish();

  MapReader ov = root.map(k::kOverlap);
  st.overlap.tp_overlap = ov.boolean(k::kTpOverlap);
  st.overlap.ub_sm_margin = ov.boolean(k::kUbSmMargin);
  st.overlap.dp_overlap = ov.boolean(k::kDpOverlap);
  st.overlap.pp_overlap = ov.boolean(k::kPpOverlap);
  // Keyed by schedule names, which live in a layer above this one: read as booleans here, the names checked by the
  // scenario reader (scenario_yaml.cpp) against its registry.
  MapReader by_schedule = ov.map(k::kPpOverlapBySchedule);
  for (const std::string& name : by_schedule.unread_keys())
    if (const auto on = by_schedule.boolean(name, false))
      st.overlap.pp_overlap_by_schedule.push_back({name, *on, by_schedule.where(name)});
  by_schedule.finish();
  st.overlap.param_gather_overlap = ov.boolean(k::kParamGatherOverlap);
  st.overlap.tp_async_allreduce = ov.boolean(k::kTpAsyncAllreduce);
  ov.finish();

  MapReader f = root.map(k::kFactors);
  st.factors.compute = f.value(k::kCompute);
  st.factors.memory = f.value(k::kMemoryFactor);
  st.factors.communication = f.value(k::kCommunication);
  st.factors.step_overhead_s = f.value(k::kStepOverhead);
  f.finish();

  const auto force = hardware::read_collective_force(root);
  st.collective_algorithm = force.algorithm;
  st.collective_protocol = force.protocol;

  MapReader cal = root.map(k::kCalibration);
  st.calibration.runs = int64_t(cal.value(k::kCalibrationRuns));
  st.calibration.heldout_errors = cal.number_list(k::kHeldoutErrors).value_or(std::vector<double>{});
  cal.finish();
  root.finish();
  return st;
}

}  // namespace dtsim::stack
