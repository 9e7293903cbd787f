// A data-parallel group laid out from its stride, unlisted (parallel/strided_group.hpp; collectives::group_layout and
// FabricRoutes::switches_spanned of a StridedGroup): each against what it replaces, the group listed member by member,
// on fat trees and rail-optimized fabrics of one to three levels, small switches (so that groups span leaves and
// pods), several NICs per node and an NVL72 rack, under tp smaller than and equal to a domain (tiny's 8 heads
// bound tp).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "parallel/collective.hpp"
#include "parallel/plan.hpp"
#include "replay/folding.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::collectives::Kind;

struct Case {
  std::string hardware;  // a file under hardware/
  std::string type;      // network.topology.type
  int levels;
  int radix;
  int64_t tp, dp, pp;
};

dtsim::scenario::ScenarioSpec load_case(const Case& c)
{
  const int64_t devices = c.tp * c.dp * c.pp;
  return dtsim::scenario::load_scenario(
      dtsim::test::source_path("scenarios/tiny.yaml"),
      {"hardware=" + dtsim::test::source_path("hardware/" + c.hardware),
       "hardware.network.topology.type=" + c.type, "hardware.network.topology.levels=" + std::to_string(c.levels),
       "hardware.network.topology.switch_radix=" + std::to_string(c.radix), "devices=" + std::to_string(devices),
       "parallel.tp=" + std::to_string(c.tp), "parallel.pp=" + std::to_string(c.pp),
       "parallel.dp=" + std::to_string(c.dp), "training.global_batch=" + std::to_string(4 * c.dp * c.pp),
       "training.micro_batch=1"});
}

std::vector<Case> cases()
{
  std::vector<Case> out;
  for (const std::string type : {"fat-tree", "rail-optimized"})
    for (int levels : {1, 2, 3})
      for (int radix : {4, 8, 40})
        for (int64_t tp : {2, 4, 8})
          for (int64_t dp : {2, 5, 37})
            out.push_back({"dgx-a100-80gb.yaml", type, levels, radix, tp, dp, 2});
  for (int64_t tp : {4, 8})  // an NVL72 rack: 4 GPUs and 4 NICs per node, 18 nodes per domain
    for (int64_t dp : {3, 19})
      out.push_back({"gb200-nvl72.yaml", "rail-optimized", 3, 8, tp, dp, 2});
  return out;
}

// Its shape, switch tiers and whether every member is alone in its domain are the listed group's; where each member
// sits at the same place of its domain the layout is unlisted (a closed form), elsewhere it is the list's.
TEST(StridedGroup, LayoutIsTheListedGroups)
{
  int unlisted = 0;
  for (const Case& c : cases()) {
    const auto spec = load_case(c);
    const auto plan = dtsim::parallel::derive_plan(spec);
    const auto fabric = dtsim::collectives::fabric_of(spec);
    const auto& pl = plan.placement;
    const std::string what = c.hardware + " " + c.type + " levels " + std::to_string(c.levels) + " radix " +
                             std::to_string(c.radix) + " tp " + std::to_string(c.tp) + " dp " + std::to_string(c.dp);
    for (int64_t st = 0; st < c.pp; ++st)
      for (int64_t r = 0; r < c.tp; ++r) {
        const auto ranks = plan.dp_ranks(st, r);
        ASSERT_EQ(ranks.list(), plan.dp_group(st, r)) << what;
        const auto listed = dtsim::collectives::group_layout(plan.dp_group(st, r), pl, fabric);
        const auto strided = dtsim::collectives::group_layout(ranks, pl, fabric);
        EXPECT_EQ(strided.strided.has_value(), ranks.stride % pl.devices_per_domain() == 0) << what;
        unlisted += strided.strided.has_value();
        EXPECT_EQ(strided.shape.ranks, listed.shape.ranks) << what;
        EXPECT_EQ(strided.shape.nodes, listed.shape.nodes) << what;
        EXPECT_EQ(strided.shape.uniform, listed.shape.uniform) << what;
        EXPECT_EQ(strided.shape.nvlink_Bps, listed.shape.nvlink_Bps) << what;
        EXPECT_EQ(strided.shape.nic_Bps, listed.shape.nic_Bps) << what;
        EXPECT_EQ(strided.switches, listed.switches) << what;
        EXPECT_EQ(fabric.routes.switches_spanned(ranks, pl), fabric.routes.switches_spanned(plan.dp_group(st, r), pl))
            << what;
        EXPECT_EQ(strided.alone, listed.alone) << what;
        EXPECT_EQ(dtsim::collectives::collective_time(Kind::AllReduce, 8, strided, fabric),
                  dtsim::collectives::collective_time(Kind::AllReduce, 8, plan.dp_group(st, r), pl, fabric))
            << what;
      }
  }
  EXPECT_GT(unlisted, 100);  // the closed form was taken, not only the list
}

// Folded onto a member, the unlisted layout gives the listed one's phases, by the member's way or the whole set's.
TEST(StridedGroup, FoldedPhasesAreTheListedGroups)
{
  for (const Case& c : cases()) {
    if (c.dp > 5)
      continue;
    const auto spec = load_case(c);
    const auto plan = dtsim::parallel::derive_plan(spec);
    const auto fabric = dtsim::collectives::fabric_of(spec);
    const dtsim::replay::Folding folding(plan, plan.placement, spec.hardware, fabric, false);
    for (int64_t st = 0; st < c.pp; ++st) {
      const auto listed = dtsim::collectives::group_layout(plan.dp_group(st, 0), plan.placement, fabric);
      const auto strided = dtsim::collectives::group_layout(plan.dp_ranks(st, 0), plan.placement, fabric);
      for (auto kind : {Kind::AllReduce, Kind::ReduceScatter, Kind::AllGather})
        for (double bytes : {1024.0, 1073741824.0}) {
          const int64_t device = plan.placement.device({st, 0, 0});
          std::vector<dtsim::collectives::Phase> a, b;
          const bool folded = folding.fold_collective(kind, bytes, listed, device, 0, a, fabric);
          ASSERT_EQ(folding.fold_collective(kind, bytes, strided, device, 0, b, fabric), folded);
          ASSERT_EQ(a.size(), b.size());
          for (size_t i = 0; i < a.size(); ++i) {
            ASSERT_EQ(a[i].flows.size(), b[i].flows.size());
            for (size_t k = 0; k < a[i].flows.size(); ++k) {
              EXPECT_EQ(a[i].flows[k].src, b[i].flows[k].src);
              EXPECT_EQ(a[i].flows[k].dst, b[i].flows[k].dst);
              EXPECT_EQ(a[i].flows[k].bytes, b[i].flows[k].bytes);
            }
            EXPECT_EQ(a[i].latency_s, b[i].latency_s);
            EXPECT_EQ(a[i].algorithm, b[i].algorithm);
            EXPECT_EQ(a[i].protocol, b[i].protocol);
          }
        }
    }
  }
}

}  // namespace
