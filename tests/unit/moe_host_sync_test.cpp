// Megatron-Core's token dispatchers wait on the host for their token counts once per MoE layer forward
// (replay/moe_host_sync.hpp): the GPU idles for the stack's host.sync_resume, under `alltoall` less the token
// permutation queued before the wait unless a CUDA graph covers the preprocessing. tiny-moe: 4 MoE layers, tp 2, ep 4
// on 16 A100.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/compute_model.hpp"
#include "model/transformer.hpp"
#include "parallel/plan.hpp"
#include "replay/moe_host_sync.hpp"
#include "replay/step_program.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"
#include "tiny_scenario.hpp"

namespace {

using dtsim::test::tiny_moe;

using dtsim::replay::Step;

const std::string kWait = "host waits for the MoE dispatch splits";

// `s` under its own stack with host.sync_resume set to `seconds` (the replay reads it from the scenario's stack).
dtsim::scenario::ScenarioSpec resuming(dtsim::scenario::ScenarioSpec s, double seconds)
{
  s.stack.host.sync_resume_s = seconds;
  return s;
}

struct Waits {
  int forward = 0, backward = 0, recomputed = 0;
  double seconds = 0;
  bool each_before_an_all_to_all = true;
};

// The waits of every stage and chunk of `s`'s step program, with the compute model of its stack (as the run builds
// them: systems/gpu_cluster/gpu_step.cpp).
Waits waits(const dtsim::scenario::ScenarioSpec& s)
{
  dtsim::model::Transformer t(s.model);
  const auto plan = dtsim::parallel::derive_plan(s);
  dtsim::kernels::ComputeModel cm(s.hardware.device, plan.precision.name, s.stack);
  const auto prog = dtsim::replay::build_step_program(s, plan, t, cm);
  Waits w;
  auto scan = [&](const std::vector<Step>& steps, int& count) {
    for (size_t i = 0; i < steps.size(); ++i) {
      if (steps[i].label.rfind(kWait, 0) != 0)
        continue;
      ++count;
      w.recomputed += steps[i].recompute;
      w.seconds += steps[i].seconds;
      w.each_before_an_all_to_all &= i + 1 < steps.size() && steps[i + 1].kind == Step::Kind::EpCollective;
    }
  };
  for (size_t st = 0; st < prog.forward.size(); ++st)
    for (size_t c = 0; c < prog.forward[st].size(); ++c) {
      scan(prog.forward[st][c], w.forward);
      scan(prog.backward[st][c], w.backward);
    }
  return w;
}

// The permutation's GPU time before the first expert all-to-all of a layer forward, by hand from its ops.
double permute_seconds(const dtsim::scenario::ScenarioSpec& s)
{
  dtsim::model::Transformer t(s.model);
  const auto plan = dtsim::parallel::derive_plan(s);
  dtsim::kernels::ComputeModel cm(s.hardware.device, plan.precision.name, s.stack);
  double permute = 0;
  for (const auto& seg : t.layer(plan.shape).forward)
    for (const auto& op : seg.ops)
      if (op.name == "dispatch_permute")
        permute += cm.seconds(op);
  return permute;
}

// Graphed preprocessing: nothing queued behind the wait, one wait of host.sync_resume per MoE layer forward, just
// before its dispatch all-to-all; none in backward (the splits are already on the host).
TEST(MoeHostSync, GraphedPreprocessingWaitsOncePerLayerForward)
{
  const auto s = tiny_moe({"parallel.moe_preprocess_graphed=true"});
  const Waits w = waits(resuming(s, 20e-6));
  EXPECT_EQ(w.forward, 4);
  EXPECT_EQ(w.backward, 0);
  EXPECT_NEAR(w.seconds, 4 * 20e-6, 1e-15);
  EXPECT_TRUE(w.each_before_an_all_to_all);
}

// Without a graph the permutation runs beside the copy and the host's dispatch: max(0, resume - permute) per layer.
TEST(MoeHostSync, PermutationHidesTheWaitWithoutAGraph)
{
  const auto s = tiny_moe();
  const double permute = permute_seconds(resuming(s, 1e-3));
  ASSERT_GT(permute, 0);
  ASSERT_LT(permute, 1e-3);
  EXPECT_NEAR(waits(resuming(s, 1e-3)).seconds, 4 * (1e-3 - permute), 1e-15);
  // A resume shorter than the permutation is hidden whole: no wait step at all.
  const Waits hidden = waits(resuming(s, permute / 2));
  EXPECT_EQ(hidden.forward, 0);
  EXPECT_DOUBLE_EQ(hidden.seconds, 0);
}

// A recomputed forward dispatches again: its own wait, marked as recomputation.
TEST(MoeHostSync, RecomputedForwardWaitsAgain)
{
  const Waits w =
      waits(resuming(tiny_moe({"parallel.moe_preprocess_graphed=true", "training.recompute=full"}), 20e-6));
  EXPECT_EQ(w.forward, 4);
  EXPECT_EQ(w.backward, 4);
  EXPECT_EQ(w.recomputed, 4);
  EXPECT_NEAR(w.seconds, 8 * 20e-6, 1e-15);
}

// The flex dispatchers (DeepEP, HybridEP) wait after their own preprocessing kernel: the whole host.sync_resume
// once per MoE layer forward, just before the dispatch, graphed preprocessing or not (the permutation queued before
// it does not hide it, unlike alltoall's); none in backward, where the forward's handle is reused.
TEST(MoeHostSync, FlexDispatchersWaitTheWholeResumePerLayerForward)
{
  const double resume = 1e-3;
  ASSERT_GT(permute_seconds(resuming(tiny_moe(), resume)), 0);
  for (const char* d : {"deepep", "hybridep"})
    for (const char* graphed : {"false", "true"}) {
      const Waits w = waits(resuming(tiny_moe({std::string("parallel.moe_dispatcher=") + d,
                                               std::string("parallel.moe_preprocess_graphed=") + graphed}),
                                     resume));
      EXPECT_EQ(w.forward, 4) << d << " graphed " << graphed;
      EXPECT_EQ(w.backward, 0) << d;
      EXPECT_NEAR(w.seconds, 4 * resume, 1e-15) << d << " graphed " << graphed;
      EXPECT_TRUE(w.each_before_an_all_to_all) << d;
    }
}

// A stack without sync_resume: no wait under any dispatcher.
TEST(MoeHostSync, NoWaitWithoutTheStackTime)
{
  for (const char* d : {"alltoall", "deepep", "hybridep"})
    EXPECT_EQ(
        waits(resuming(tiny_moe({std::string("parallel.moe_dispatcher=") + d, "parallel.moe_preprocess_graphed=true"}),
                       0))
            .forward,
        0)
        << d;
}

// The warning that parallel.moe_preprocess_graphed has no effect and the wait the replay prices read one predicate
// (scenario/moe_dispatch_wait.hpp). The shipped Qwen3-30B run on B200 (alltoall dispatcher, graphed preprocessing,
// host.sync_resume 20 us): no warning, and graphing moves the wait; without a stack the warning fires and no wait is
// priced; under DeepEP it fires and the wait is the same graphed or not.
TEST(MoeHostSync, WarningOfNoEffectWhereAndOnlyWhereGraphingChangesNoWait)
{
  const std::string qwen = dtsim::test::source_path("scenarios/validation/bridge-2511-qwen3-30b-8-b200-mxfp8.yaml");
  auto graphed_warned = [](const dtsim::scenario::ScenarioSpec& s) {
    for (const auto& d : s.warnings)
      if (d.key_path == "parallel.moe_preprocess_graphed")
        return true;
    return false;
  };
  auto load = [&](std::vector<std::string> sets) { return dtsim::scenario::load_scenario(qwen, sets); };
  const auto acting = load({});
  ASSERT_FALSE(graphed_warned(acting));
  const Waits priced = waits(acting);
  EXPECT_GT(priced.forward, 0);
  EXPECT_NE(waits(load({"parallel.moe_preprocess_graphed=false"})).seconds, priced.seconds);

  const auto unstacked = load({"stack=none"});
  EXPECT_TRUE(graphed_warned(unstacked));
  EXPECT_EQ(waits(unstacked).forward, 0);

  const auto deepep = load({"parallel.moe_dispatcher=deepep"});
  EXPECT_TRUE(graphed_warned(deepep));
  EXPECT_GT(waits(deepep).forward, 0);
  EXPECT_DOUBLE_EQ(waits(load({"parallel.moe_dispatcher=deepep", "parallel.moe_preprocess_graphed=false"})).seconds,
                   waits(deepep).seconds);
}

}  // namespace
