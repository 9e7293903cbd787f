// Several jobs on one fabric (issue 13, section 4): two jobs whose nodes share leaf switches with oversubscribed
// uplinks slow each other down; on leaves of their own, or where the uplinks are not oversubscribed, they do not.
// A job alone on the cluster steps exactly as `dtsim run` does, step after step; the folded replay of shared jobs
// agrees with the replay of every device; and the inputs that cannot share a fabric are refused.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "test_paths.hpp"

namespace {

using dtsim::test::dtsim_binary;
using dtsim::test::rel_diff;
using dtsim::test::run_capture;
using dtsim::test::source_path;

// A fat tree of 32-port switches: 16 NIC ports per leaf, two nodes of 8 NICs. Each job (tiny GPT, tp 2, pp 4,
// dp 4) takes 4 nodes: packed, job 1 sits on leaves 0 and 1 and job 2 on leaves 2 and 3; spread, each job has one
// node on every leaf and both send through every uplink.
std::string fat_tree_overrides(int oversubscription)
{
  return " --set hardware.network.topology.type=fat-tree --set hardware.network.topology.levels=2"
         " --set hardware.network.topology.switch_radix=32 --set hardware.network.topology.oversubscription=" +
         std::to_string(oversubscription) + " --set devices=32 --set parallel.dp=4";
}

nlohmann::json shared(const std::string& scenarios, const std::string& extra)
{
  const std::string cmd = "'" + dtsim_binary() + "' run " + scenarios + " --shared-fabric --format json" + extra;
  auto r = run_capture(cmd);
  EXPECT_EQ(r.rc, 0) << cmd;
  return r.rc == 0 ? nlohmann::json::parse(r.out).at("shared_fabric") : nlohmann::json::object();
}

std::string twice(const std::string& scenario)
{
  return "'" + source_path(scenario) + "' '" + source_path(scenario) + "'";
}

double alone(const nlohmann::json& job) { return job.at("alone").at("step_time_s").get<double>(); }
double together(const nlohmann::json& job) { return job.at("shared").at("step_time_s").get<double>(); }

#define NEEDS_BINARY()                                                     \
  if (dtsim_binary().empty())                                              \
  GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable"

TEST(SharedFabric, JobsSharingOversubscribedUplinksSlowDown)
{
  NEEDS_BINARY();
  const auto r = shared(twice("scenarios/tiny.yaml"), fat_tree_overrides(4) + " --placement spread");
  ASSERT_EQ(r.at("jobs").size(), 2u);
  EXPECT_EQ(r.at("cluster_nodes").get<int>(), 8);
  for (const auto& job : r.at("jobs")) {
    EXPECT_EQ(job.at("leaves").get<int>(), 4);
    EXPECT_EQ(job.at("leaves_shared").get<int>(), 4);
    EXPECT_GT(together(job), alone(job) * 1.05) << "alone " << alone(job) << " s, shared " << together(job) << " s";
    EXPECT_GE(job.at("shared").at("steps_s").size(), 3u);
    // The time lost is communication that the other job's traffic held up, not compute.
    const auto& a = job.at("alone").at("breakdown");
    const auto& s = job.at("shared").at("breakdown");
    EXPECT_NEAR(s.at("compute_s").get<double>(), a.at("compute_s").get<double>(), 1e-12);
    EXPECT_GT(s.at("exposed_pp_comm_s").get<double>() + s.at("exposed_dp_comm_s").get<double>(),
              a.at("exposed_pp_comm_s").get<double>() + a.at("exposed_dp_comm_s").get<double>());
  }
  EXPECT_EQ(r.at("jobs")[0].at("nodes"), nlohmann::json({0, 2, 4, 6}));
  EXPECT_EQ(r.at("jobs")[1].at("nodes"), nlohmann::json({1, 3, 5, 7}));
}

// Out of phase (--stagger: job 2 starts half its step late), the two jobs' heaviest traffic meets less often: they
// still slow each other, by less than in phase; on leaves of their own, still not at all.
TEST(SharedFabric, StaggeredJobsSlowEachOtherLessThanInPhase)
{
  NEEDS_BINARY();
  const auto in_phase = shared(twice("scenarios/tiny.yaml"), fat_tree_overrides(4) + " --placement spread");
  const auto staggered = shared(twice("scenarios/tiny.yaml"), fat_tree_overrides(4) + " --placement spread --stagger");
  const auto& second = staggered.at("jobs")[1];
  EXPECT_NEAR(second.at("start_s").get<double>(), alone(second) / 2, 1e-15);
  for (size_t j = 0; j < 2; ++j) {
    const auto& job = staggered.at("jobs")[j];
    EXPECT_GT(together(job), alone(job) * 1.001);
    EXPECT_LT(together(job), together(in_phase.at("jobs")[j]));
    EXPECT_GE(job.at("shared").at("steps_s").size(), 3u);
  }
  const auto packed = shared(twice("scenarios/tiny.yaml"), fat_tree_overrides(4) + " --placement packed --stagger");
  for (const auto& job : packed.at("jobs"))
    EXPECT_LT(rel_diff(together(job), alone(job)), 1e-9);
}

TEST(SharedFabric, JobsOnLeavesOfTheirOwnDoNotSlowDown)
{
  NEEDS_BINARY();
  const auto r = shared(twice("scenarios/tiny.yaml"), fat_tree_overrides(4) + " --placement packed");
  for (const auto& job : r.at("jobs")) {
    EXPECT_EQ(job.at("leaves").get<int>(), 2);
    EXPECT_EQ(job.at("leaves_shared").get<int>(), 0);
    EXPECT_LT(rel_diff(together(job), alone(job)), 1e-9);
  }
  EXPECT_EQ(r.at("jobs")[1].at("nodes"), nlohmann::json({4, 5, 6, 7}));
}

TEST(SharedFabric, UplinksThatAreNotOversubscribedAreNeverShared)
{
  NEEDS_BINARY();
  const auto r = shared(twice("scenarios/tiny.yaml"), fat_tree_overrides(1) + " --placement spread");
  for (const auto& job : r.at("jobs"))
    EXPECT_LT(rel_diff(together(job), alone(job)), 1e-9);
}

TEST(SharedFabric, FoldedAgreesWithEveryDevice)
{
  NEEDS_BINARY();
  const auto folded = shared(twice("scenarios/tiny.yaml"), fat_tree_overrides(4) + " --placement spread");
  const auto full = shared(twice("scenarios/tiny.yaml"),
                           fat_tree_overrides(4) + " --placement spread --set simulation.fidelity=full");
  for (size_t j = 0; j < 2; ++j) {
    EXPECT_LT(rel_diff(alone(folded.at("jobs")[j]), alone(full.at("jobs")[j])), 0.005);
    EXPECT_LT(rel_diff(together(folded.at("jobs")[j]), together(full.at("jobs")[j])), 0.005);
  }
}

// Jobs of different sizes, spread: job 1 (4 nodes) gets nodes 0, 2, 4, 5, so two of its nodes share leaves with job 2
// (nodes 1, 3) and two have a leaf to themselves. Its ranks meet the other job's traffic unevenly; the folded replay
// still carries every flow that crosses an uplink, and agrees with the replay of every device.
TEST(SharedFabric, UnevenSharingFoldedAgreesWithEveryDevice)
{
  NEEDS_BINARY();
  const std::string big = "/tmp/dtsim-shared-fabric-" + std::to_string(getpid()) + ".yaml";
  {
    std::ofstream f(big);
    f << "name: tiny GPT on 32 A100\nmodel: " << source_path("models/tiny-gpt.yaml")
      << "\nhardware: " << source_path("hardware/dgx-a100-80gb.yaml")
      << "\ndevices: 32\nparallel:\n  tp: 2\n  pp: 2\nschedule: 1f1b\ntraining:\n  global_batch: 64\n"
         "  micro_batch: 4\n  seq_len: 512\n  precision: bf16\n  recompute: none\n";
  }
  const std::string jobs = "'" + big + "' '" + source_path("scenarios/tiny.yaml") + "'";
  const std::string fat_tree = " --placement spread --set hardware.network.topology.type=fat-tree"
                               " --set hardware.network.topology.levels=2"
                               " --set hardware.network.topology.switch_radix=32"
                               " --set hardware.network.topology.oversubscription=4"
                               // both jobs' steps bound by what they send (their TP all-reduces after the GEMMs)
                               " --set parallel.tp_async_allreduce=false";
  const auto folded = shared(jobs, fat_tree);
  const auto full = shared(jobs, fat_tree + " --set simulation.fidelity=full");
  std::remove(big.c_str());
  ASSERT_EQ(folded.at("jobs").size(), 2u);
  EXPECT_EQ(folded.at("jobs")[0].at("nodes"), nlohmann::json({0, 2, 4, 5}));
  EXPECT_EQ(folded.at("jobs")[0].at("leaves_shared").get<int>(), 2);
  // Sharing never speeds a job up, and here slows at least one (whether the big job's flows meet the other's in
  // time depends on both timelines: its slowdown is 0.07% or none).
  double slowed = 0;
  for (size_t j = 0; j < 2; ++j) {
    // (up to rounding: a step's end adds its closing all-reduces to the clock, its time alone adds them to a length)
    EXPECT_GE(together(folded.at("jobs")[j]), alone(folded.at("jobs")[j]) * (1 - 1e-12));
    slowed += together(folded.at("jobs")[j]) - alone(folded.at("jobs")[j]);
    EXPECT_LT(rel_diff(together(folded.at("jobs")[j]), together(full.at("jobs")[j])), 0.005);
  }
  EXPECT_GT(slowed, 0);
}

// One job on the shared-fabric path: its steps back to back are `dtsim run`'s step, each of them.
TEST(SharedFabric, OneJobStepsAsARunAlone)
{
  NEEDS_BINARY();
  const std::string tiny = "'" + source_path("scenarios/tiny.yaml") + "'";
  const auto r = shared(tiny, fat_tree_overrides(4) + " --steps 4");
  auto run = run_capture("'" + dtsim_binary() + "' run " + tiny + " --format json" + fat_tree_overrides(4));
  ASSERT_EQ(run.rc, 0);
  const double step = nlohmann::json::parse(run.out).at("step_time_s").get<double>();
  const auto& job = r.at("jobs")[0];
  EXPECT_LT(rel_diff(alone(job), step), 1e-12);
  ASSERT_EQ(job.at("shared").at("steps_s").size(), 4u);
  for (const auto& s : job.at("shared").at("steps_s"))
    EXPECT_LT(rel_diff(s.get<double>(), step), 1e-9);
}

// Jobs of different lengths: the shorter runs more steps; each has at least --steps steps that ended while both ran.
TEST(SharedFabric, JobsOfDifferentLengthsEachCountTheirContendedSteps)
{
  NEEDS_BINARY();
  const auto r = shared("'" + source_path("scenarios/tiny.yaml") + "' '" + source_path("scenarios/tiny-moe.yaml") + "'",
                        " --steps 2 --set hardware.network.topology.oversubscription=4");
  for (const auto& job : r.at("jobs")) {
    EXPECT_GE(job.at("shared").at("steps_s").size(), 2u);
    EXPECT_GE(job.at("shared").at("steps_run").get<size_t>(), job.at("shared").at("steps_s").size());
  }
}

// placement.segment (Slurm's --segment) on a shared fabric: each job is laid out on domains of its segment, as
// `dtsim run` lays it out alone. Two tiny GPTs of 16 GB200 with segment 2 take two 2-tray domains each (nodes 0-3 and
// 4-7 of a cluster of 8 trays); each steps alone as `dtsim run` of it, its pipeline crossing the NICs between its two
// segments where the whole rack would hold it on NVLink. Jobs holding different parts of the domains are refused.
TEST(SharedFabric, EachJobHoldsItsSegmentOfTheDomains)
{
  NEEDS_BINARY();
  const std::string segmented = "'" + source_path("tests/unit/data/tiny-gb200-segment2.yaml") + "'";
  const std::string whole = "'" + source_path("tests/unit/data/tiny-gb200.yaml") + "'";
  const auto r = shared(segmented + " " + segmented, "");
  EXPECT_EQ(r.at("cluster_nodes").get<int>(), 8);
  ASSERT_EQ(r.at("jobs").size(), 2u);
  EXPECT_EQ(r.at("jobs")[0].at("nodes"), nlohmann::json({0, 1, 2, 3}));
  EXPECT_EQ(r.at("jobs")[1].at("nodes"), nlohmann::json({4, 5, 6, 7}));
  auto step_of = [](const std::string& scenario) {
    auto run = run_capture("'" + dtsim_binary() + "' run " + scenario + " --format json");
    EXPECT_EQ(run.rc, 0) << scenario;
    return run.rc == 0 ? nlohmann::json::parse(run.out).at("step_time_s").get<double>() : 0.0;
  };
  const double alone_segmented = step_of(segmented), alone_whole = step_of(whole);
  for (const auto& job : r.at("jobs"))
    EXPECT_LT(rel_diff(alone(job), alone_segmented), 1e-12);
  EXPECT_GT(rel_diff(alone_segmented, alone_whole), 0.01);  // the segment changes the placement
  // Whole racks: 18 trays per domain, each job on 4 trays of a rack of its own.
  const auto racks = shared(whole + " " + whole, "");
  EXPECT_EQ(racks.at("cluster_nodes").get<int>(), 36);
  EXPECT_EQ(racks.at("jobs")[1].at("nodes"), nlohmann::json({18, 19, 20, 21}));
  EXPECT_LT(rel_diff(alone(racks.at("jobs")[0]), alone_whole), 1e-12);
  auto mixed = run_capture("'" + dtsim_binary() + "' run " + segmented + " " + whole + " --shared-fabric 2>&1");
  EXPECT_EQ(mixed.rc, 2);
  EXPECT_NE(mixed.out.find("placement.segment: expected domains of 2 nodes (placement.segment)"), std::string::npos)
      << mixed.out;
}

TEST(SharedFabric, InputsThatCannotShareAFabricAreRefused)
{
  NEEDS_BINARY();
  const std::string bin = "'" + dtsim_binary() + "' ";
  const std::string tiny = "'" + source_path("scenarios/tiny.yaml") + "' ";
  struct Bad {
    std::string args, says;
  };
  const Bad cases[] = {
      {"run " + tiny + "'" + source_path("scenarios/compare/gpt-j-6b-h100.yaml") + "' --shared-fabric",
       "device.name is H100-SXM5-80GB, not A100-SXM4-80GB"},
      {"run " + tiny + "'" + source_path("scenarios/compare/gpt-j-6b-cs2.yaml") + "' --shared-fabric",
       "expected a GPU cluster"},
      {"run " + tiny + tiny, "take --shared-fabric"},
      {"run " + tiny + tiny + "--shared-fabric --trace /tmp/never-written.json", "does not take --shared-fabric"},
      {"validate " + tiny + tiny, "take --shared-fabric"},
      {"run " + tiny + "--placement spread", "requires --shared-fabric"},
      {"run " + tiny + "--stagger", "requires --shared-fabric"},
  };
  for (const auto& c : cases) {
    auto r = run_capture(bin + c.args + " 2>&1");
    EXPECT_EQ(r.rc, 2) << c.args;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << c.args << "\n" << r.out;
  }
  // A job whose plan does not fit: which job and why, exit 3, as dtsim run says it of one scenario.
  auto big = run_capture(bin + "run " + tiny + tiny + "--shared-fabric --set model.hidden_size=65536 2>&1");
  EXPECT_EQ(big.rc, 3);
  EXPECT_NE(big.out.find("job 2 (" + source_path("scenarios/tiny.yaml") + "): the plan does not fit in memory"),
            std::string::npos)
      << big.out;
  auto ok = run_capture(bin + "validate " + tiny + tiny + "--shared-fabric --placement spread");
  EXPECT_EQ(ok.rc, 0);
  EXPECT_NE(ok.out.find("2 jobs on 4 nodes, placement spread: ok"), std::string::npos) << ok.out;
}

}  // namespace
