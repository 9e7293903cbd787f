// A folded expert all-to-all (replay::Folding::fold_onto and fold_all_to_all) against the same all-to-all replayed
// whole, flow for flow, on SimGrid: groups of GB200 NVL72 racks whose members are alike (inside a rack, or split
// evenly over two) and groups whose members differ (split 72 + 56, 32 + 72 + 24, 3 + 5 over racks). Each whole group
// and its folded copy run at once on racks of their own (the fabric shares no link: one NIC per GPU, no
// oversubscription), so both end as they would alone; the folded copy must end when the whole one does.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "parallel/all_to_all.hpp"
#include "parallel/collective.hpp"
#include "parallel/fabric.hpp"
#include "parallel/plan.hpp"
#include "platform/cluster_platform.hpp"
#include "replay/activities.hpp"
#include "replay/collective_runner.hpp"
#include "replay/folding.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::collectives::Kind;
using dtsim::collectives::Phase;

std::vector<int64_t> devices_from(int64_t first, int64_t count)
{
  std::vector<int64_t> g(size_t(count), 0);
  std::iota(g.begin(), g.end(), first);
  return g;
}

// A whole group and a copy of it, placed alike over the racks, to be folded.
struct Pair {
  const char* name;
  int64_t whole, copy, members;
  double inter_node_scale;
};

// One engine per process: every pair in one replay.
TEST(AllToAllFold, FoldedGroupsEndWhenTheWholeGroupsDo)
{
  // 1,536 GPUs: 21 racks of 72 and one of 24 (rack k: devices 72k to 72k + 71), dp 384, tp 2, pp 2.
  const auto s = dtsim::scenario::load_scenario(dtsim::test::source_path("scenarios/bench/qwen3-235b-gb200-512.yaml"),
                                                {"devices=1536", "training.global_batch=3072"});
  dtsim::replay::Activities engine;
  const auto plan = dtsim::parallel::derive_plan(s);
  const auto& placement = plan.placement;
  const auto fabric = dtsim::collectives::fabric_of(s);
  dtsim::platform::ClusterPlatform platform(s.hardware, placement);
  dtsim::replay::Folding folding(plan, placement, s.hardware, fabric, false);
  ASSERT_FALSE(folding.layout().has_shared_links());
  dtsim::replay::CollectiveRunner runner(engine, placement, folding);
  runner.attach(platform);
  ASSERT_EQ(placement.devices_per_domain(), 72);

  const double bytes = 64e6;  // about one microbatch's dispatch of Qwen3-235B at seq 4096 (4096 x 8 x 4096 x fp8 / 2)
  const std::vector<Pair> used = {
      {"in one rack (64)", 0, 72, 64, 1.0},            // racks 0 and 1
      {"32 + 32", 184, 328, 64, 1.0},                  // racks 2|3 and 4|5
      {"72 + 56", 432, 576, 128, 1.0},                 // racks 6|7 and 8|9
      {"32 + 72 + 24", 760, 1048, 128, 1.0},           // racks 10|11|12 and 14|15|16
      {"3 + 5", 141, 285, 8, 1.0},                     // racks 1|2 and 3|4
      {"3 + 5, node-limited 0.5", 933, 1005, 8, 0.5},  // racks 12|13 and 13|14
      {"72 + 56, node-limited 0.5", 1224, 1368, 128, 0.5},  // racks 17|18 and 19|20
  };
  struct Run {
    std::string name;
    double whole_end = -1, folded_end = -1;
    size_t whole_flows = 0, folded_flows = 0;
  };
  std::vector<Run> runs;
  std::vector<std::shared_ptr<const std::vector<Phase>>> whole, folded;
  for (const auto& p : used) {
    const auto a = devices_from(p.whole, p.members), b = devices_from(p.copy, p.members);
    // Placed alike: the same number of members in each rack, in the same order.
    for (int64_t i = 0; i + 1 < p.members; ++i)
      ASSERT_EQ(placement.domain_of(a[size_t(i)]) == placement.domain_of(a[size_t(i + 1)]),
                placement.domain_of(b[size_t(i)]) == placement.domain_of(b[size_t(i + 1)]))
          << p.name;
    auto full = dtsim::collectives::plan_collective(Kind::AllToAll, bytes, a, placement, fabric, p.inter_node_scale);
    auto mine = dtsim::collectives::plan_collective(Kind::AllToAll, bytes, b, placement, fabric, p.inter_node_scale);
    ASSERT_EQ(full.size(), 1u);
    ASSERT_TRUE(folding.fold_onto(mine, b.front(), 0) || folding.fold_all_to_all(mine, b.front())) << p.name;
    runs.push_back({p.name, -1, -1, full[0].flows.size(), mine[0].flows.size()});
    whole.push_back(std::make_shared<const std::vector<Phase>>(std::move(full)));
    folded.push_back(std::make_shared<const std::vector<Phase>>(std::move(mine)));
  }
  engine.run([&]() {
    for (size_t i = 0; i < runs.size(); ++i) {
      runner.run_phases(whole[i], 0, [&runs, i]() { runs[i].whole_end = dtsim::replay::Activities::now(); });
      runner.run_phases(folded[i], 0, [&runs, i]() { runs[i].folded_end = dtsim::replay::Activities::now(); });
    }
  });
  for (const auto& r : runs) {
    std::printf("[all-to-all fold] %-26s whole %.12g s (%zu flows), folded %.12g s (%zu flows)\n", r.name.c_str(),
                r.whole_end, r.whole_flows, r.folded_end, r.folded_flows);
    ASSERT_GT(r.whole_end, 0) << r.name;
    EXPECT_NEAR(r.folded_end, r.whole_end, 1e-12 * r.whole_end) << r.name;
    EXPECT_LT(r.folded_flows, r.whole_flows) << r.name;
  }
}

}  // namespace
