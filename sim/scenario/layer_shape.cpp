#include "scenario/layer_shape.hpp"

namespace dtsim::scenario {

model::Shape layer_shape(const ScenarioSpec& s)
{
  const int elem = s.training.precision == "fp32" ? 4 : 2;
  model::Shape shape{s.training.micro_batch, s.training.seq_len, s.parallel.tp, s.parallel.sp, elem, s.parallel.ep,
                     s.training.busiest_expert_load(), s.parallel.cp, s.training.flash_attention,
                     s.training.precision == "fp8"};
  shape.fp8_current_scaling = s.stack.fp8_recipe == stack::Fp8Recipe::Current;
  // Transformer Engine casts the weights to fp8 on the first microbatch of a step and reuses the cast copy for the
  // others (the is_first_microbatch argument of its modules, which Megatron-LM passes): one cast per step.
  shape.fp8_weight_cast_share = 1.0 / double(std::max<int64_t>(1, s.microbatches));
  return shape;
}

}  // namespace dtsim::scenario
