// placement.segment (scenario/job_segment.hpp): a job holding part of each NVLink domain, as Slurm's --segment asks,
// is placed on domains of that many nodes; the hardware file still describes the whole domain.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "parallel/placement.hpp"
#include "scenario/job_segment.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::test::source_path;

const char* kDeepSeekGb200 = "scenarios/validation/bridge-2604-deepseek-v3-256-gb200-mxfp8.yaml";

// The NVLink domains the expert-parallel group of each pipeline stage spans (tp 1, ep = dp: the stage's devices).
std::vector<size_t> domains_per_expert_group(const dtsim::scenario::ScenarioSpec& s)
{
  const auto& p = s.parallel;
  const dtsim::parallel::Placement placement(p.dp_cp(), p.tp, p.pp, s.hardware.domain_devices());
  std::vector<size_t> spans;
  for (int64_t stage = 0; stage < p.pp; ++stage) {
    std::set<int64_t> domains;
    for (int64_t device : placement.rank_group(stage, 0, 0, p.ep))
      domains.insert(placement.domain_of(device));
    spans.push_back(domains.size());
  }
  return spans;
}

// Megatron-Bridge's DeepSeek-V3 on 256 GB200 (64 trays, launched with --segment 16): 16 trays of each 18-tray rack,
// 64 GPUs per domain, so that each stage's EP-64 group is one domain. On whole racks of 72, three of the four stages
// split their group over two racks.
TEST(JobSegment, PlacesTheJobOnSegmentsOfTheDomain)
{
  const auto s = dtsim::scenario::load_scenario(source_path(kDeepSeekGb200), {});
  EXPECT_EQ(s.placement.segment, 16);
  EXPECT_EQ(s.placement.domain_nodes, 18);
  EXPECT_EQ(s.hardware.scale_up.nodes, 16);
  EXPECT_EQ(s.hardware.domain_devices(), 64);
  EXPECT_EQ(s.hardware.domain_nics(), 64);
  EXPECT_EQ(domains_per_expert_group(s), (std::vector<size_t>{1, 1, 1, 1}));
  EXPECT_EQ(dtsim::scenario::segment_note(s), ", of the domain's 18: placement.segment");

  const auto whole = dtsim::scenario::load_scenario(source_path(kDeepSeekGb200), {"--unset placement.segment"});
  EXPECT_EQ(whole.placement.segment, 0);
  EXPECT_EQ(whole.hardware.scale_up.nodes, 18);
  EXPECT_EQ(whole.hardware.domain_devices(), 72);
  EXPECT_EQ(domains_per_expert_group(whole), (std::vector<size_t>{1, 2, 2, 2}));
  EXPECT_EQ(dtsim::scenario::segment_note(whole), "");

  // A segment of the whole domain places as no segment does.
  const auto all = dtsim::scenario::load_scenario(source_path(kDeepSeekGb200), {"placement.segment=18"});
  EXPECT_EQ(all.hardware.domain_devices(), 72);
  EXPECT_EQ(domains_per_expert_group(all), domains_per_expert_group(whole));
}

}  // namespace
