#include "scenario/layer_shape.hpp"

#include "scenario/scenario_rules.hpp"

namespace dtsim::scenario {

model::Shape layer_shape(const ScenarioSpec& s)
{
  const int elem = s.training.precision == "fp32" ? 4 : 2;
  model::Shape shape{s.training.micro_batch, s.training.seq_len, s.parallel.tp, s.parallel.sp, elem, s.parallel.ep,
                     s.training.busiest_expert_load(), s.parallel.cp, s.training.flash_attention,
                     s.training.precision == "fp8"};
  shape.experts_whole = s.parallel.experts_whole();
  shape.tp_comm_overlap = s.parallel.tp_overlap;
  shape.tp_micro_pipeline = s.stack.tp_overlap_micro_pipeline;
  shape.ub_gather_copy = s.stack.ub_gather_copy;
  shape.ub_proj_fprop.method = s.parallel.ub_proj_fprop_method;
  shape.ub_proj_fprop.sms = s.parallel.ub_proj_fprop_sms;
  shape.ub_proj_fprop.sm_margin = s.parallel.ub_proj_fprop_sm_margin;
  shape.ub_fc2_fprop.method = s.parallel.ub_fc2_fprop_method;
  shape.ub_fc2_fprop.sms = s.parallel.ub_fc2_fprop_sms;
  shape.ub_fc2_fprop.sm_margin = s.parallel.ub_fc2_fprop_sm_margin;
  shape.tp_async_allreduce = s.parallel.tp_async_allreduce;
  shape.fp8_current_scaling = s.training.fp8_recipe == stack::Fp8Recipe::Current;
  shape.fp8_norm_amax = shape.fp8_current_scaling && s.training.fp8_norm_amax;
  shape.fp8_transpose = !s.hardware.device.fp8_non_tn_gemm;
  shape.low_precision_saves_16bit = s.stack.memory.fp8_saves_16bit;
  shape.tp_saves_gathered_inputs = s.stack.memory.tp_saves_gathered_inputs;
  shape.cross_entropy = s.training.cross_entropy;
  shape.cp_allgather = s.stack.context_parallel_allgather;
  // Transformer Engine casts the weights to fp8 on the first microbatch of a step and reuses the cast copy for the
  // others (the is_first_microbatch argument of its modules, which Megatron-LM passes): one cast per step.
  shape.fp8_weight_cast_share = 1.0 / double(std::max<int64_t>(1, s.microbatches));
  // Megatron-LM pads the vocabulary to a multiple of make_vocab_size_divisible_by (default 128) times the TP size,
  // so that every TP rank holds a whole, GEMM-friendly slice of the output matrix (_vocab_size_with_padding in
  // megatron/training/tokenizer/tokenizer.py). Other frameworks (the wafer's) keep the vocabulary.
  if (scenario_rules(s).pads_vocabulary()) {
    const int64_t multiple = 128 * s.parallel.tp;
    shape.padded_vocab = (s.model.vocab + multiple - 1) / multiple * multiple;
  }
  return shape;
}

}  // namespace dtsim::scenario
