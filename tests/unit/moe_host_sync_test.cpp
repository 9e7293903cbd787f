// Megatron-Core's token dispatchers wait on the host for their token counts once per MoE layer forward
// (replay/moe_host_sync.hpp): the GPU idles for the stack's host.sync_resume, under `alltoall` less the token
// permutation queued before the wait unless a CUDA graph covers the preprocessing. tiny-moe: 4 MoE layers, tp 2, ep 4 on 16 A100.
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

dtsim::stack::StackSpec resuming(double seconds)
{
  dtsim::stack::StackSpec st;
  st.host.sync_resume_s = seconds;
  return st;
}

struct Waits {
  int forward = 0, backward = 0, recomputed = 0;
  double seconds = 0;
  bool each_before_an_all_to_all = true;
};

Waits waits(const dtsim::scenario::ScenarioSpec& s, const dtsim::stack::StackSpec& st)
{
  dtsim::model::Transformer t(s.model);
  dtsim::kernels::ComputeModel cm(s.hardware.device, s.training.precision, st);
  const auto prog = dtsim::replay::build_step_program(s, dtsim::parallel::derive_plan(s), t, cm);
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
  scan(prog.forward[0][0], w.forward);
  scan(prog.backward[0][0], w.backward);
  return w;
}

// The permutation's GPU time before the first expert all-to-all of a layer forward, by hand from its ops.
double permute_seconds(const dtsim::scenario::ScenarioSpec& s, const dtsim::stack::StackSpec& st)
{
  dtsim::model::Transformer t(s.model);
  dtsim::kernels::ComputeModel cm(s.hardware.device, s.training.precision, st);
  double permute = 0;
  for (const auto& seg : t.layer(dtsim::parallel::derive_plan(s).shape).forward)
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
  const Waits w = waits(s, resuming(20e-6));
  EXPECT_EQ(w.forward, 4);
  EXPECT_EQ(w.backward, 0);
  EXPECT_NEAR(w.seconds, 4 * 20e-6, 1e-15);
  EXPECT_TRUE(w.each_before_an_all_to_all);
}

// Without a graph the permutation runs beside the copy and the host's dispatch: max(0, resume - permute) per layer.
TEST(MoeHostSync, PermutationHidesTheWaitWithoutAGraph)
{
  const auto s = tiny_moe();
  const double permute = permute_seconds(s, resuming(1e-3));
  ASSERT_GT(permute, 0);
  ASSERT_LT(permute, 1e-3);
  EXPECT_NEAR(waits(s, resuming(1e-3)).seconds, 4 * (1e-3 - permute), 1e-15);
  // A resume shorter than the permutation is hidden whole: no wait step at all.
  const Waits hidden = waits(s, resuming(permute / 2));
  EXPECT_EQ(hidden.forward, 0);
  EXPECT_DOUBLE_EQ(hidden.seconds, 0);
}

// A recomputed forward dispatches again: its own wait, marked as recomputation.
TEST(MoeHostSync, RecomputedForwardWaitsAgain)
{
  const Waits w = waits(tiny_moe({"parallel.moe_preprocess_graphed=true", "training.recompute=full"}),
                        resuming(20e-6));
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
  ASSERT_GT(permute_seconds(tiny_moe(), resuming(resume)), 0);
  for (const char* d : {"deepep", "hybridep"})
    for (const char* graphed : {"false", "true"}) {
      const Waits w = waits(tiny_moe({std::string("parallel.moe_dispatcher=") + d,
                                      std::string("parallel.moe_preprocess_graphed=") + graphed}),
                            resuming(resume));
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
    EXPECT_EQ(waits(tiny_moe({std::string("parallel.moe_dispatcher=") + d, "parallel.moe_preprocess_graphed=true"}),
                    resuming(0))
                  .forward,
              0)
        << d;
}

}  // namespace
