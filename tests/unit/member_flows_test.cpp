// One member's flows of a collective, laid without laying the others' (AlgorithmDef::lay_member_flows,
// collectives::plan_busiest_member, replay::Folding::fold_collective; docs/performance.md, "One step at any
// scale"): each against what it replaces, the whole set laid flow by flow and folded by fold_onto.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/algorithm_parts.hpp"
#include "collectives/algorithm_registry.hpp"
#include "parallel/collective.hpp"
#include "parallel/plan.hpp"
#include "replay/folding.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::collectives::Flow;
using dtsim::collectives::Phase;

bool same_flows(const std::vector<Flow>& a, const std::vector<Flow>& b)
{
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].src != b[i].src || a[i].dst != b[i].dst || a[i].bytes != b[i].bytes)
      return false;
  return true;
}

// Every algorithm that lays one member's flows, on groups of one member per node from 2 to 700 nodes (devices 8
// apart, as a data-parallel group under tp 8): a member's flows are lay_flows' that touch it, in its order; every
// flow has the same bytes; each member sends and receives member_flows of them; first_busiest_node is the first
// node whose member sends the most.
TEST(MemberFlows, EachMembersFlowsAreThoseOfTheWholeSet)
{
  int checked = 0;
  for (const auto& a : dtsim::collectives::algorithms()) {
    if (a.lay_member_flows == nullptr)
      continue;
    ASSERT_NE(a.member_flows, nullptr) << a.name;
    ASSERT_NE(a.first_busiest_node, nullptr) << a.name;
    ++checked;
    for (int64_t nodes = 2; nodes <= 700; nodes += nodes < 80 ? 1 : 37) {
      std::vector<int64_t> group;
      dtsim::collectives::MembersByNode by_node;
      for (int64_t x = 0; x < nodes; ++x) {
        group.push_back(8 * x);
        by_node.push_back({8 * x});
      }
      dtsim::collectives::GroupShape g;
      g.ranks = g.nodes = nodes;
      std::vector<Flow> all;
      a.lay_flows(group, by_node, g, 3e6, 5e6, all);
      ASSERT_FALSE(all.empty()) << a.name << " " << nodes;
      for (const auto& f : all)
        ASSERT_EQ(f.bytes, all.front().bytes) << a.name << " " << nodes;
      int64_t most = 0, first = -1;
      for (int64_t x = 0; x < nodes; ++x) {
        const int64_t m = by_node[size_t(x)].front();
        std::vector<Flow> theirs, mine;
        int64_t sent = 0, received = 0;
        for (const auto& f : all)
          if (f.src == m || f.dst == m) {
            theirs.push_back(f);
            sent += f.src == m;
            received += f.dst == m;
          }
        a.lay_member_flows(dtsim::collectives::LoneMembers(group), g, 3e6, 5e6, x, mine);
        ASSERT_TRUE(same_flows(mine, theirs)) << a.name << " " << nodes << " nodes, node " << x;
        ASSERT_EQ(sent, received) << a.name << " " << nodes << " nodes, node " << x;
        ASSERT_EQ(a.member_flows(x, g), sent) << a.name << " " << nodes << " nodes, node " << x;
        if (sent > most) {
          most = sent;
          first = x;
        }
      }
      ASSERT_EQ(a.first_busiest_node(g), first) << a.name << " " << nodes << " nodes";
    }
  }
  EXPECT_EQ(checked, 3);  // ring, tree, pat
}

// The folded data-parallel collective of a plan, both ways: plan_collective laid flow by flow and folded by
// fold_onto, and fold_collective, which takes the busiest member's flows alone where the algorithm lays them.
struct FoldedCollective {
  explicit FoldedCollective(std::vector<std::string> overrides)
      : spec(dtsim::scenario::load_scenario(dtsim::test::source_path("scenarios/tiny.yaml"), std::move(overrides))),
        plan(dtsim::parallel::derive_plan(spec)),
        fabric(dtsim::collectives::fabric_of(spec)),
        folding(plan, plan.placement, spec.hardware, fabric, false)
  {
  }
  dtsim::scenario::ScenarioSpec spec;
  dtsim::parallel::DerivedPlan plan;
  dtsim::collectives::Fabric fabric;
  dtsim::replay::Folding folding;
};

// tp 8 (a node's 8 GPUs) and dp from 2 to 45: every data-parallel group has one member per node. Every kind,
// every forced algorithm (and NCCL's choice), sizes from 1 KiB to 1 GiB, folded onto each stage's representative and
// onto another member: the same phases either way, and the member's way taken for the ring, the tree and PAT.
TEST(MemberFlows, FoldCollectiveIsFoldOntoOfTheWholeSet)
{
  using dtsim::collectives::Kind;
  int by_member = 0;
  for (int64_t dp : {2, 3, 5, 6, 12, 37, 45}) {
    FoldedCollective f({"devices=" + std::to_string(16 * dp), "parallel.tp=8", "parallel.pp=2",
                        "parallel.dp=" + std::to_string(dp), "training.global_batch=" + std::to_string(4 * dp),
                        "training.micro_batch=1"});
    for (int64_t st : {0, 1})
      for (const std::string algorithm : {"auto", "ring", "tree", "pat", "nvls"}) {
        auto fabric = f.fabric;
        fabric.choice.algorithm = algorithm;
        const auto layout = dtsim::collectives::group_layout(f.plan.dp_group(st, 0), f.plan.placement, fabric);
        for (auto kind : {Kind::AllReduce, Kind::ReduceScatter, Kind::AllGather})
          for (double bytes : {1024.0, 3e6, 1073741824.0})
            for (int64_t device : {f.plan.placement.device({st, 0, 0}), f.plan.placement.device({st, dp - 1, 0})}) {
              auto whole = dtsim::collectives::plan_collective(kind, bytes, layout, f.plan.placement, fabric);
              const bool folded = f.folding.fold_onto(whole, device, 0);
              std::vector<Phase> phases;
              ASSERT_EQ(f.folding.fold_collective(kind, bytes, layout, device, 0, phases, fabric), folded);
              if (!folded)
                continue;
              ASSERT_EQ(phases.size(), whole.size());
              for (size_t i = 0; i < phases.size(); ++i) {
                EXPECT_TRUE(same_flows(phases[i].flows, whole[i].flows)) << dp << " " << algorithm;
                EXPECT_EQ(phases[i].latency_s, whole[i].latency_s);
                EXPECT_EQ(phases[i].algorithm, whole[i].algorithm);
                EXPECT_EQ(phases[i].protocol, whole[i].protocol);
                EXPECT_EQ(phases[i].inter_node, whole[i].inter_node);
              }
              by_member += dtsim::collectives::plan_busiest_member(kind, bytes, layout, f.plan.placement, fabric,
                                                                   device)
                               .has_value();
            }
      }
  }
  EXPECT_GT(by_member, 500);  // the member's way was taken, not only the whole set's
}

// Where members share a node (tp 4: two data-parallel ranks per node), the whole set is laid: no member's way.
TEST(MemberFlows, MembersSharingANodeAreLaidWhole)
{
  FoldedCollective f({"devices=32", "parallel.tp=4", "parallel.pp=1", "parallel.dp=8", "training.global_batch=32",
                      "training.micro_batch=1"});
  const auto layout = dtsim::collectives::group_layout(f.plan.dp_group(0, 0), f.plan.placement, f.fabric);
  EXPECT_FALSE(dtsim::collectives::plan_busiest_member(dtsim::collectives::Kind::AllReduce, 1e6, layout,
                                                       f.plan.placement, f.fabric, 0)
                   .has_value());
}

}  // namespace
