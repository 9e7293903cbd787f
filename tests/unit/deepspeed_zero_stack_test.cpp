// DeepSpeed ZeRO 1 and 2 as the stack keys kernels.zero_gradients and kernels.optimizer_step_bytes describe it
// (hardware/stacks/deepspeed-hf-2026-h200.yaml): each gradient bucket all-reduced, the rank keeping its slice
// (deepspeed v0.19.2 stage_1_and_2.py average_tensor), and an optimizer step of 70 bytes per updated parameter where
// Megatron-LM's moves 54. Checked on the stas00 H200 validation scenario against the same scenario without a stack.
#include <gtest/gtest.h>

#include "kernels/compute_model.hpp"
#include "model/transformer.hpp"
#include "parallel/plan.hpp"
#include "replay/gradient_sync.hpp"
#include "replay/step_program.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::parallel::derive_plan;
using dtsim::test::source_path;

constexpr const char* kDeepSpeedH200 = "scenarios/validation/stas00-2605-llama31-8b-8-h200-zero2.yaml";

dtsim::scenario::ScenarioSpec deepspeed_h200_with(std::vector<std::string> overrides)
{
  return dtsim::scenario::load_scenario(source_path(kDeepSpeedH200), overrides);
}

}  // namespace

TEST(DeepSpeedZeroStack, ReadsBothKeys)
{
  const auto s = deepspeed_h200_with({});
  EXPECT_TRUE(s.stack.zero_gradients_all_reduce);
  EXPECT_DOUBLE_EQ(s.stack.optimizer_step_bytes, 70);
  const auto none = deepspeed_h200_with({"stack=none"});
  EXPECT_FALSE(none.stack.zero_gradients_all_reduce);
  EXPECT_DOUBLE_EQ(none.stack.optimizer_step_bytes, 0);
}

TEST(DeepSpeedZeroStack, Stages1And2AllReduceTheBucketsStage3ReduceScatters)
{
  using dtsim::collectives::Kind;
  for (int zero : {1, 2}) {
    SCOPED_TRACE("zero " + std::to_string(zero));
    const auto s = deepspeed_h200_with({"parallel.zero=" + std::to_string(zero)});
    EXPECT_EQ(dtsim::replay::gradient_collective(derive_plan(s)), Kind::AllReduce);
    const auto none = deepspeed_h200_with({"parallel.zero=" + std::to_string(zero), "stack=none"});
    EXPECT_EQ(dtsim::replay::gradient_collective(derive_plan(none)), Kind::ReduceScatter);
  }
  const auto z3 = deepspeed_h200_with({"parallel.zero=3"});
  EXPECT_EQ(dtsim::replay::gradient_collective(derive_plan(z3)), Kind::ReduceScatter);
}

TEST(DeepSpeedZeroStack, OptimizerStepMovesTheStacksBytesPerParameter)
{
  const auto s = deepspeed_h200_with({});
  const auto none = deepspeed_h200_with({"stack=none"});
  dtsim::model::Transformer t(s.model);
  dtsim::kernels::ComputeModel cm(s.hardware.device, s.training.precision);
  const auto p = dtsim::replay::build_step_program(s, derive_plan(s), t, cm);
  const auto p_none = dtsim::replay::build_step_program(none, derive_plan(none), t, cm);
  ASSERT_EQ(p.optimizer_seconds.size(), 1u);
  // The same 1/8 of the parameters updated; only the bytes per parameter differ: 70 against Megatron-LM's 54.
  EXPECT_NEAR(p.optimizer_seconds[0] / p_none.optimizer_seconds[0], 70.0 / dtsim::replay::kOptimizerBytesPerParam,
              1e-12);
  EXPECT_DOUBLE_EQ(dtsim::replay::kOptimizerBytesPerParam, 54);
}
