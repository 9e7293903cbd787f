#include "stack/stack_record.hpp"

namespace dtsim::stack {

namespace {

// An overlap default the stack sets, or null: the scenario's own default then applies.
nlohmann::ordered_json optional_switch(const std::optional<bool>& v)
{
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

}  // namespace

// One line per field of StackSpec that a key fills, in the order of the declarations (stack_keys.cpp); a unit test
// checks that every declared key has its line (tests/unit/stack/stack_record_test.cpp).
nlohmann::ordered_json stack_record(const StackSpec& st)
{
  nlohmann::ordered_json r;
  r["file"] = st.file;
  r["name"] = st.name;
  r["framework"] = st.framework;
  r["version"] = st.version;
  r["nccl"] = st.nccl_version;
  r["kernels"] = {{"attention", to_string(st.attention)},
                  {"fp8_recipe", to_string(st.fp8_recipe)},
                  {"cross_entropy", to_string(st.cross_entropy)},
                  {"cuda_graphs", st.cuda_graphs},
                  {"ub_gather_copy", st.ub_gather_copy},
                  {"loss_all_reduce", st.loss_all_reduce_per_microbatch ? "per_microbatch" : "none"},
                  {"context_parallel", st.context_parallel_allgather ? "torch-allgather" : "ring"},
                  {"tp_overlap", st.tp_overlap_micro_pipeline ? "torch-micro-pipeline" : "userbuffers"},
                  {"zero_gradients", st.zero_gradients_all_reduce ? "all-reduce" : "reduce-scatter"},
                  {"optimizer_step_bytes", st.optimizer_step_bytes}};
  r["host"] = {{"launch", st.host.launch_s},
               {"per_layer", st.host.per_layer_s},
               {"per_microbatch", st.host.per_microbatch_s},
               {"sync_resume", st.host.sync_resume_s},
               {"expert_gemm", st.host.expert_gemm_s}};
  const FrameworkMemory& m = st.memory;
  r["memory"] = {{"cuda_context", m.cuda_context_bytes},
                 {"nccl_buffers", m.nccl_buffer_bytes},
                 {"fragmentation", m.fragmentation},
                 {"fp32_gradients", m.fp32_gradients},
                 {"optimizer_state", to_string(m.optimizer_state)},
                 {"fp8_saves_16bit", m.fp8_saves_16bit},
                 {"pipeline_keeps_stage_outputs", m.pipeline_keeps_stage_outputs},
                 {"pipeline_keeps_logits", m.pipeline_keeps_logits},
                 {"pipeline_keeps_input_grads", m.pipeline_keeps_input_grads},
                 {"pipeline_keeps_outputs_to_step_end", m.pipeline_keeps_outputs_to_step_end},
                 {"pipeline_merges_outputs", m.pipeline_merges_outputs},
                 {"pipeline_recv_buffers", m.pipeline_recv_buffers},
                 {"fsdp_layer_buffers", m.fsdp_layer_buffers},
                 {"fsdp_gradient_pool", m.fsdp_gradient_pool},
                 {"fsdp_fp32_shard_only", m.fsdp_fp32_shard_only},
                 {"tp_saves_gathered_inputs", m.tp_saves_gathered_inputs},
                 {"loss_bytes_per_logit", m.loss_bytes_per_logit},
                 {"loss_parallel_bytes_per_logit", m.loss_parallel_bytes_per_logit},
                 {"final_norm_bytes_per_element", m.final_norm_bytes_per_element}};
  r["overlap"] = {{"tp_overlap", optional_switch(st.overlap.tp_overlap)},
                  {"dp_overlap", optional_switch(st.overlap.dp_overlap)},
                  {"pp_overlap", optional_switch(st.overlap.pp_overlap)},
                  {"param_gather_overlap", optional_switch(st.overlap.param_gather_overlap)},
                  {"tp_async_allreduce", optional_switch(st.overlap.tp_async_allreduce)},
                  {"ub_sm_margin", optional_switch(st.overlap.ub_sm_margin)}};
  r["overlap"]["pp_overlap_by_schedule"] = nlohmann::ordered_json::object();
  for (const auto& e : st.overlap.pp_overlap_by_schedule)
    r["overlap"]["pp_overlap_by_schedule"][e.schedule] = e.pp_overlap;
  r["factors"] = {{"compute", st.factors.compute},
                  {"memory", st.factors.memory},
                  {"communication", st.factors.communication},
                  {"step_overhead", st.factors.step_overhead_s}};
  r["calibration"] = {{"runs", st.calibration.runs}, {"heldout_errors", st.calibration.heldout_errors}};
  r["collectives"] = {{"algorithm", st.collective_algorithm.empty() ? "auto" : st.collective_algorithm},
                      {"protocol", st.collective_protocol.empty() ? "auto" : st.collective_protocol}};
  return r;
}

}  // namespace dtsim::stack
