// Folding without SimGrid (replay/folding.hpp): which flows a folded replay keeps for the ranks it does not simulate,
// on plans whose placement is worked out by hand. tiny.yaml: DGX A100 nodes of 8 GPUs with 8 NICs each (no shared
// link unless a test shares them), devices numbered stage, then data-parallel index, then TP rank.
#include <gtest/gtest.h>
#include <algorithm>

#include <string>
#include <vector>

#include "parallel/collective.hpp"
#include "parallel/plan.hpp"
#include "replay/folding.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::collectives::Flow;
using dtsim::collectives::Phase;

// A scenario, its plan and the folding of its step, kept together (Folding refers to the plan).
struct Folded {
  explicit Folded(std::vector<std::string> overrides)
      : spec(dtsim::scenario::load_scenario(dtsim::test::source_path("scenarios/tiny.yaml"), std::move(overrides))),
        plan(dtsim::parallel::derive_plan(spec)),
        folding(plan, plan.placement, spec.hardware, dtsim::collectives::fabric_of(spec),
                spec.fidelity == dtsim::scenario::Fidelity::Full)
  {
  }
  dtsim::scenario::ScenarioSpec spec;
  dtsim::parallel::DerivedPlan plan;
  dtsim::replay::Folding folding;
};

// tp 8 on 32 devices: dp 4, one data-parallel rank per node (devices 0, 8, 16, 24 for TP rank 0).
const std::vector<std::string> kOnePerNode = {"devices=32", "parallel.tp=8", "parallel.pp=1", "parallel.dp=4",
                                              "training.global_batch=64"};

std::vector<std::pair<int64_t, int64_t>> routes(const std::vector<Flow>& flows)
{
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& f : flows)
    out.push_back({f.src, f.dst});
  return out;
}

TEST(Folding, RingOntoTheRepresentativeKeepsItsOwnEdges)
{
  Folded f(kOnePerNode);
  std::vector<Phase> phases(1);
  phases[0].flows = {{0, 8, 1e6}, {8, 16, 1e6}, {16, 24, 1e6}, {24, 0, 1e6}};
  ASSERT_TRUE(f.folding.fold_onto(phases, 0, 0));
  // Every member of the ring moves as much as device 0: its own two edges stand for all of them.
  EXPECT_EQ(routes(phases[0].flows), (std::vector<std::pair<int64_t, int64_t>>{{0, 8}, {24, 0}}));
}

TEST(Folding, ChainFoldsItsBusiestMemberOntoTheDevice)
{
  Folded f(kOnePerNode);
  std::vector<Phase> phases(1);
  phases[0].flows = {{0, 8, 1e6}, {8, 16, 1e6}, {16, 24, 1e6}};
  ASSERT_TRUE(f.folding.fold_onto(phases, 0, 0));
  // Device 8 (dp 1) sends and receives: its flows, moved back by one data-parallel index, set the time.
  EXPECT_EQ(routes(phases[0].flows), (std::vector<std::pair<int64_t, int64_t>>{{24, 0}, {0, 8}}));
}

TEST(Folding, AMemberMovingMoreOfOneKindDoesNotFold)
{
  Folded f(kOnePerNode);
  std::vector<Phase> phases(1);
  // Device 8 sends across nodes, device 0 within its node only: no member moves the most of every kind.
  phases[0].flows = {{0, 1, 2e6}, {8, 16, 1e6}};
  const auto before = routes(phases[0].flows);
  EXPECT_FALSE(f.folding.fold_onto(phases, 0, 0));
  EXPECT_EQ(routes(phases[0].flows), before);
}

TEST(Folding, SharedNicsKeepEveryCopyThatCrossesThem)
{
  auto overrides = kOnePerNode;
  overrides.push_back("hardware.network.nics_per_node=1");
  Folded f(overrides);
  std::vector<Phase> phases(1);
  phases[0].flows = {{0, 8, 1e6}};
  EXPECT_FALSE(f.folding.fold_onto(phases, 0, 0));  // copies may load the NIC: nothing folds onto the device
  // Every other (dp, tp) rank's copy crosses its node's one NIC: 4 x 8 ranks, less the original.
  const auto copies = f.folding.shared_copies({0, 8, 1e6}, 1, true);
  EXPECT_EQ(copies.size(), 31u);
  for (const auto& c : copies)
    EXPECT_TRUE(f.folding.layout().crosses_shared_link(c.src, c.dst));
  EXPECT_TRUE(f.folding.needed_devices().empty());  // copies may run anywhere: every device
}

TEST(Folding, FullFidelityFoldsNothing)
{
  auto overrides = kOnePerNode;
  overrides.push_back("hardware.network.nics_per_node=1");
  overrides.push_back("simulation.fidelity=full");
  Folded f(overrides);
  std::vector<Phase> phases(1);
  phases[0].flows = {{0, 8, 1e6}, {8, 0, 1e6}};
  EXPECT_FALSE(f.folding.fold_onto(phases, 0, 0));
  EXPECT_TRUE(f.folding.shared_copies({0, 8, 1e6}, 1, true).empty());
  EXPECT_TRUE(f.folding.needed_devices().empty());
  EXPECT_EQ(f.folding.asymmetry({{0, 0}}, false), "");
}

TEST(Folding, NeededDevicesHoldTheRepresentativesTpGroups)
{
  Folded f({});  // tp 2, pp 4, dp 2: stage s on devices 4s .. 4s + 3
  const auto need = f.folding.needed_devices();
  ASSERT_FALSE(need.empty());
  EXPECT_TRUE(std::is_sorted(need.begin(), need.end()));
  EXPECT_EQ(std::adjacent_find(need.begin(), need.end()), need.end());  // each device once
  EXPECT_LE(need.back(), 15);
  for (int64_t st = 0; st < 4; ++st)
    for (int64_t d : f.plan.tp_group(st, 0))
      EXPECT_TRUE(std::binary_search(need.begin(), need.end(), d)) << "device " << d;
}

TEST(Folding, NvlinkExclusiveToTpOnlyWhenNothingElseSharesTheNode)
{
  // One data-parallel rank per node, one stage: the TP group alone uses NVLink.
  EXPECT_TRUE(Folded(kOnePerNode).folding.nvlink_exclusive_to_tp(false));
  // tiny: stages 0 and 1 share node 0, so pipeline transfers use NVLink too.
  EXPECT_FALSE(Folded({}).folding.nvlink_exclusive_to_tp(true));
}

TEST(Folding, AsymmetryNamesAStageThatEndsInsideANode)
{
  // tiny: stages of 4 devices, two per node: every rank of a stage sees the same routes.
  EXPECT_EQ(Folded({}).folding.asymmetry({{0, 1}, {1, 2}, {2, 3}}, true), "");
  // dp 3: stage 0 on devices 0-5, stage 1 on 6-11 across the node boundary: rank 0 sends within node 0, rank 1 across.
  Folded odd({"devices=24", "parallel.dp=3", "training.global_batch=48"});
  const std::string note = odd.folding.asymmetry({{0, 1}}, false);
  EXPECT_NE(note.find("stage 0 send their activations to stage 1"), std::string::npos) << note;
}

}  // namespace
