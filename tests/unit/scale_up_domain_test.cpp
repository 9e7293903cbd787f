// Scale-up domains (issue 32, step 1): an NVLink domain of several hosts (GB200 NVL72: 18 trays of 4 GPUs) against
// DGX-style hardware, whose domain is its host. Placement, the fabric's NICs, NCCL's algorithm choice and the plan
// space follow the domain; the hosts keep their NICs.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "parallel/collective.hpp"
#include "parallel/plan.hpp"
#include "parallel/plan_space.hpp"
#include "platform/fabric_layout.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::collectives::Kind;
using dtsim::parallel::derive_plan;

// GPT-3 175B on two NVL72 racks, tp 16 (scenarios/examples/gpt3-175b-gb200x144.yaml).
const char* kNvl72 = "scenarios/examples/gpt3-175b-gb200x144.yaml";
const char* kOnDgxH100 = "hardware=../../hardware/dgx-h100.yaml";

dtsim::scenario::ScenarioSpec load_scale_up_scenario(std::vector<std::string> overrides = {})
{
  return dtsim::scenario::load_scenario(dtsim::test::source_path(kNvl72), std::move(overrides));
}

std::set<int64_t> domains_of(const std::vector<int64_t>& group, const dtsim::parallel::Placement& p)
{
  std::set<int64_t> d;
  for (int64_t dev : group)
    d.insert(p.domain_of(dev));
  return d;
}

std::string chosen_all_reduce(const dtsim::scenario::ScenarioSpec& s, const std::vector<int64_t>& group,
                              const dtsim::parallel::Placement& p)
{
  const auto phases = dtsim::collectives::plan_collective(Kind::AllReduce, 1 << 30, group, p,
                                                          dtsim::collectives::fabric_of(s));
  return phases.empty() || phases.front().algorithm == nullptr ? "" : phases.front().algorithm->name;
}

TEST(ScaleUpDomain, Nvl72FileDescribesHostsAndTheRackDomain)
{
  const auto s = load_scale_up_scenario();
  const auto& hw = s.hardware;
  EXPECT_TRUE(hw.scale_up.from_section);
  EXPECT_EQ(hw.node.devices, 4);
  EXPECT_EQ(hw.scale_up.nodes, 18);
  EXPECT_EQ(hw.domain_devices(), 72);
  EXPECT_EQ(hw.domain_nics(), 72);  // one NIC per GPU, every tray's
  EXPECT_EQ(hw.scale_up.nvswitch_generation, 4);
  EXPECT_TRUE(hw.scale_up.nvls);
  EXPECT_DOUBLE_EQ(hw.scale_up.nvlink.goodput_Bps, 721.8e9);
}

TEST(ScaleUpDomain, DgxFileIsItsOwnDomain)
{
  const auto s = load_scale_up_scenario({kOnDgxH100});
  EXPECT_FALSE(s.hardware.scale_up.from_section);
  EXPECT_EQ(s.hardware.scale_up.nodes, 1);
  EXPECT_EQ(s.hardware.domain_devices(), 8);
  EXPECT_DOUBLE_EQ(s.hardware.scale_up.nvlink.goodput_Bps, 370.8e9);  // node.nvlink of hardware/dgx-h100.yaml
  EXPECT_EQ(s.hardware.scale_up.nvswitch_generation, 3);
}

TEST(ScaleUpDomain, Tp16On144Nvl72GpusFillsTwoRacksAndOneGroupStraddles)
{
  const auto s = load_scale_up_scenario();
  const auto plan = derive_plan(s);
  // Megatron's rank order fills every GPU of both racks: the job occupies the 144 devices it names (the report's
  // power counts them), 2 racks, not 3 of 64 used each.
  EXPECT_EQ(plan.placement.devices_per_domain(), 72);
  EXPECT_EQ(plan.placement.domains(), 2);
  EXPECT_EQ(plan.placement.devices(), s.devices);
  // 72 / 16 = 4.5: the fifth group, ranks 64-79 (stage 1, pipeline 1), spans racks 0 and 1.
  EXPECT_EQ(plan.placement.tp_groups(), 9);
  EXPECT_EQ(plan.placement.tp_groups_straddling(), 1);
  EXPECT_TRUE(plan.placement.tp_group_straddles(1, 1));
  EXPECT_EQ(dtsim::parallel::tp_straddling_note(plan.placement),
            "1 of 9 tp groups spans two NVLink domains: its collectives cross the scale-out network");
  // Folded, dp 0 names that pipeline, the slowest: its stage-1 group is the straddling one.
  EXPECT_EQ(plan.placement.representative_pipeline(), 1);
  const auto straddling = plan.tp_group(1, 0);
  EXPECT_EQ(straddling.front(), 64);
  EXPECT_EQ(domains_of(straddling, plan.placement), (std::set<int64_t>{0, 1}));
  // NVLS reduces within one NVSwitch domain only: the straddling group's all-reduce takes another algorithm.
  EXPECT_NE(chosen_all_reduce(s, straddling, plan.placement), "nvls");
  for (int64_t st = 0; st < 3; ++st)
    for (int64_t dp = 0; dp < 3; ++dp) {
      if (st == 1 && dp == 0)
        continue;
      const auto group = plan.tp_group(st, dp);
      ASSERT_EQ(group.size(), 16u);
      EXPECT_EQ(domains_of(group, plan.placement).size(), 1u) << "stage " << st << " dp " << dp;
      // 16 GPUs of 4 trays, one NVLink domain: NCCL's NVLS (NVLink SHARP), as within a DGX.
      EXPECT_EQ(chosen_all_reduce(s, group, plan.placement), "nvls");
    }
  // In full fidelity every device is simulated and dp 0 stays rank order's first pipeline.
  const auto full = derive_plan(load_scale_up_scenario({"simulation.fidelity=full"}));
  EXPECT_EQ(full.placement.representative_pipeline(), 0);
  EXPECT_EQ(full.tp_group(1, 1).front(), 64);
}

TEST(ScaleUpDomain, Tp48On144Nvl72GpusStraddlesInTheMiddleStage)
{
  const auto s = load_scale_up_scenario({"parallel.tp=48"});
  const auto plan = derive_plan(s);
  EXPECT_EQ(plan.placement.dp(), 1);
  EXPECT_EQ(plan.placement.domains(), 2);
  // Stages 0 and 2 sit in racks 0 and 1; stage 1 (ranks 48-95) has 24 GPUs in each.
  EXPECT_EQ(plan.placement.tp_groups_straddling(), 1);
  EXPECT_EQ(domains_of(plan.tp_group(0, 0), plan.placement), (std::set<int64_t>{0}));
  EXPECT_EQ(domains_of(plan.tp_group(1, 0), plan.placement), (std::set<int64_t>{0, 1}));
  EXPECT_EQ(domains_of(plan.tp_group(2, 0), plan.placement), (std::set<int64_t>{1}));
}

TEST(ScaleUpDomain, TpDividingTheDomainNeverStraddles)
{
  // tp 8 divides 72; on a DGX (domain 8) tp 16 spans two hosts in every group alike, which is not straddling.
  EXPECT_EQ(derive_plan(load_scale_up_scenario({"parallel.tp=8"})).placement.tp_groups_straddling(), 0);
  const auto dgx = derive_plan(load_scale_up_scenario({kOnDgxH100}));
  EXPECT_EQ(dgx.placement.tp_groups_straddling(), 0);
  EXPECT_EQ(dgx.placement.representative_pipeline(), 0);
  EXPECT_EQ(dtsim::parallel::tp_straddling_note(dgx.placement), "");
}

TEST(ScaleUpDomain, Tp16OnDgxSpansTwoHostsAndLeavesNvls)
{
  const auto s = load_scale_up_scenario({kOnDgxH100});
  const auto plan = derive_plan(s);
  EXPECT_EQ(plan.placement.devices_per_domain(), 8);
  const auto group = plan.tp_group(0, 0);
  EXPECT_EQ(domains_of(group, plan.placement), (std::set<int64_t>{0, 1}));
  const std::string algo = chosen_all_reduce(s, group, plan.placement);
  EXPECT_NE(algo, "nvls");  // NVLS reduces within one domain only
  EXPECT_FALSE(algo.empty());
}

TEST(ScaleUpDomain, NvlsOffIsHonoured)
{
  const auto s = load_scale_up_scenario({"hardware.scale_up.nvls=false"});
  EXPECT_FALSE(s.hardware.scale_up.nvls);
  const auto plan = derive_plan(s);
  EXPECT_EQ(chosen_all_reduce(s, plan.tp_group(0, 0), plan.placement), "ring");
}

TEST(ScaleUpDomain, DevicesSendAcrossRacksFromTheirTraysNics)
{
  const auto s = load_scale_up_scenario();
  const auto plan = derive_plan(s);
  const dtsim::platform::FabricLayout layout(s.hardware, plan.placement);
  EXPECT_EQ(layout.nic_count(), 2 * 72);  // 2 racks of 18 trays of 4 NICs
  EXPECT_TRUE(layout.same_domain(0, 71));   // first and last GPU of rack 0: 17 trays apart, one NVLink domain
  EXPECT_FALSE(layout.same_domain(71, 72));
  EXPECT_EQ(layout.nic_index(5), 5);        // tray 1's second GPU: its own NIC
  EXPECT_EQ(layout.nic_index(72 + 6), 78);  // rack 1's seventh GPU (tray 20): NIC 72 + 6
  EXPECT_FALSE(layout.crosses_shared_link(0, 72));  // one NIC per GPU, uplinks not oversubscribed
}

TEST(ScaleUpDomain, SearchTriesTpUpToTheDomain)
{
  // 288 devices (4 racks): tp 32 with pp 3 divides them.
  auto s = load_scale_up_scenario({"devices=288"});
  dtsim::parallel::PlanDimensions dims;
  const auto space = dtsim::parallel::enumerate_plans(s, dims);
  int64_t largest = 0;
  for (const auto& p : space.fitting)
    largest = std::max(largest, p.parallel.tp);
  EXPECT_EQ(largest, 32);  // 96 heads: tp 16 and 32 divide them, 64 does not; a DGX stops at 8
  const auto dgx = dtsim::parallel::enumerate_plans(load_scale_up_scenario({kOnDgxH100, "devices=288"}), dims);
  largest = 0;
  for (const auto& p : dgx.fitting)
    largest = std::max(largest, p.parallel.tp);
  EXPECT_EQ(largest, 8);
}

TEST(ScaleUpDomain, ExpertGroupsAcrossRacksPickTheSlowestPipeline)
{
  // Qwen3-235B on 512 GB200, tp 2 pp 2, ep 64 with experts whole on every TP rank: an expert group is 64 devices, 32
  // pipelines. Pipelines 0, 32, 64, 96 meet racks 0 | 32+32; 8+56 | 40+24; 16+48 | 48+16; 24+40 | 40+56 (stage 0 |
  // stage 1): the slowest member of a 56 + 8 split sends 56 of its 63 shares over its NIC. The last two tie at their
  // worst stage; the later stage decides (96).
  const std::string bench = dtsim::test::source_path("scenarios/bench/qwen3-235b-gb200-512.yaml");
  const auto s = dtsim::scenario::load_scenario(bench, {});
  const auto plan = derive_plan(s);
  const dtsim::parallel::CrossingGroups g{1, 64, true};
  EXPECT_EQ(plan.placement.crossing_align(g), 32);
  const auto c96 = plan.placement.pipeline_crossing(96, g);
  ASSERT_EQ(c96.size(), 2u);
  EXPECT_DOUBLE_EQ(c96[0], 40.0 / 63);
  EXPECT_DOUBLE_EQ(c96[1], 56.0 / 63);
  EXPECT_EQ(plan.placement.pipeline_crossing(0, g), (std::vector<double>{0.0, 32.0 / 63}));
  EXPECT_EQ(plan.placement.representative_pipeline(), 96);
  // Its expert group on stage 1 is devices 448-511: 56 in rack 6, 8 in rack 7.
  EXPECT_EQ(plan.ep_group(1, 0, 0).front(), 448);
  // On DGX H200 hosts (a domain of 8) every group spans 8 hosts alike: rank order's first.
  const auto dgx = derive_plan(dtsim::scenario::load_scenario(bench, {"hardware=../../hardware/dgx-h200.yaml"}));
  EXPECT_EQ(dgx.placement.representative_pipeline(), 0);
}

// Context-parallel rings across NVL72 racks: the tiny GPT on 224 GB200 (tests/unit/data/tiny-gb200.yaml: racks of
// 72), tp 1, pp 2, cp 16, dp 7: a ring is 16 consecutive devices, a stage 112. Only two rings straddle a rack's end,
// 8 + 8 each: pipeline 64's on stage 0 (devices 64-79, racks 0 | 1) and pipeline 96's on stage 1 (devices 208-223,
// racks 2 | 3). They tie at their worst stage (a straddling ring runs at its NIC hop's pace: share 1); the later
// stage decides (96).
TEST(ScaleUpDomain, ContextParallelRingsAcrossRacksTieOnTheLaterStage)
{
  const auto s = dtsim::scenario::load_scenario(
      dtsim::test::source_path("tests/unit/data/tiny-gb200.yaml"),
      {"devices=224", "parallel.tp=1", "parallel.pp=2", "parallel.cp=16", "parallel.dp=7", "training.global_batch=56"});
  const auto plan = derive_plan(s);
  const dtsim::parallel::CrossingGroups g{16, 1, false};
  EXPECT_EQ(plan.placement.crossing_align(g), 16);
  for (int64_t r = 0; r < 112; r += 16) {
    const std::vector<double> expected = r == 64 ? std::vector<double>{1, 0}
                                         : r == 96 ? std::vector<double>{0, 1}
                                                   : std::vector<double>{0, 0};
    EXPECT_EQ(plan.placement.pipeline_crossing(r, g), expected) << "pipeline " << r;
  }
  EXPECT_EQ(plan.placement.representative_pipeline(), 96);
  const auto full = derive_plan(dtsim::scenario::load_scenario(
      dtsim::test::source_path("tests/unit/data/tiny-gb200.yaml"),
      {"devices=224", "parallel.tp=1", "parallel.pp=2", "parallel.cp=16", "parallel.dp=7", "training.global_batch=56",
       "simulation.fidelity=full"}));
  EXPECT_EQ(full.placement.representative_pipeline(), 0);
}

// The representative's search stops after crossing_period candidates: past it the crossings repeat, so the choice
// is the one every candidate gives. Checked on domains of 4, 8 (DGX hosts) and 72 (NVL72 racks) with tp, cp and
// expert groups (within and across TP ranks) that meet domain ends at every offset.
TEST(ScaleUpDomain, RepresentativeSearchWithinOnePeriodChoosesAsEveryCandidate)
{
  int64_t shapes = 0, not_first = 0, shortened = 0;
  for (int64_t domain : {4, 8, 72})
    for (int64_t tp : {1, 2, 4, 8, 16})
      for (int64_t pp : {1, 3})
        for (int64_t cp : {1, 2, 4})
          for (int64_t ep : {1, 2, 6, 16})
            for (bool across : {false, true}) {
              if (across && tp == 1)
                continue;
              const dtsim::parallel::CrossingGroups g{cp, ep, across};
              // Every dp, also those whose groups do not tile a stage (then every candidate is compared).
              for (int64_t dp = 1; dp <= 40; ++dp) {
                dtsim::parallel::Placement p(dp, tp, pp, domain);
                const int64_t period = p.crossing_period(g);
                for (int64_t r = 0; r + period < dp; r += p.crossing_align(g))
                  ASSERT_EQ(p.pipeline_crossing(r + period, g), p.pipeline_crossing(r, g))
                      << "domain " << domain << " tp " << tp << " pp " << pp << " cp " << cp << " ep " << ep
                      << " dp " << dp << " pipeline " << r;
                const int64_t expected = p.slowest_pipeline(g, dp);  // every candidate compared
                p.represent_slowest_pipeline(g);
                ASSERT_EQ(p.representative_pipeline(), expected)
                    << "domain " << domain << " tp " << tp << " pp " << pp << " cp " << cp << " ep " << ep
                    << " dp " << dp;
                ++shapes;
                not_first += expected != 0 ? 1 : 0;
                shortened += period < dp ? 1 : 0;
              }
            }
  // The grid reaches both kinds of choice and cuts many searches short (measured: 25,920 shapes, 7,386 represented
  // by another pipeline than 0, 6,378 searched within a shorter period than dp).
  EXPECT_GT(not_first, 1000);
  EXPECT_GT(shortened, shapes / 5);
}

}  // namespace
