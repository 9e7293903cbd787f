// The stack's pipeline transfers per schedule (overlap.pp_overlap_by_schedule): torch.distributed.pipelining's
// interleaved schedule waits for each time step's batch of sends and receives, its GPipe does not; the stack says so
// once and every scenario that runs the schedule takes it.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "core/diagnostics.hpp"
#include "run_json.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::test::source_path;

dtsim::scenario::ScenarioSpec load_pipeline_under_stack(const std::string& stack, std::vector<std::string> overrides)
{
  overrides.push_back("stack=" + source_path("tests/unit/data/" + stack));
  return dtsim::scenario::load_scenario(source_path("tests/unit/data/pipeline.yaml"), overrides);
}

const std::vector<std::string> kInterleavedTwoChunks = {"schedule=interleaved-1f1b", "parallel.vpp=2"};

TEST(StackPpOverlap, TheScheduleEntryDecidesUnlessTheScenarioSays)
{
  // overlap.pp_overlap
  EXPECT_TRUE(load_pipeline_under_stack("stack-pp-by-schedule.yaml", {"schedule=gpipe"}).parallel.pp_overlap);
  // its entry
  EXPECT_FALSE(load_pipeline_under_stack("stack-pp-by-schedule.yaml", kInterleavedTwoChunks).parallel.pp_overlap);
  auto own = kInterleavedTwoChunks;
  own.push_back("parallel.pp_overlap=true");
  // the scenario's own setting
  EXPECT_TRUE(load_pipeline_under_stack("stack-pp-by-schedule.yaml", own).parallel.pp_overlap);
}

// Both errors at once, each naming the stack file, the key, what was expected and what was found.
TEST(StackPpOverlap, ABadNameOrValueIsAnInputError)
{
  try {
    load_pipeline_under_stack("stack-pp-by-schedule-bad.yaml", {});
    FAIL() << "loaded";
  } catch (const dtsim::ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("stack-pp-by-schedule-bad.yaml"), std::string::npos) << what;
    EXPECT_NE(what.find("overlap.pp_overlap_by_schedule.interleaved-1fb1"), std::string::npos) << what;
    EXPECT_NE(what.find("expected a schedule name"), std::string::npos) << what;
    EXPECT_NE(what.find("got 'interleaved-1fb1'"), std::string::npos) << what;
    EXPECT_NE(what.find("overlap.pp_overlap_by_schedule.1f1b"), std::string::npos) << what;
    EXPECT_NE(what.find("expected true or false"), std::string::npos) << what;
  }
}

// Four stages, two chunks each, eight microbatches, every hop on NVLink (tests/unit/data/slow-network.yaml: 100 GB/s
// and 10 us). Asynchronous, a unit waits only for its own input; in the lock-step the stack gives the interleaved
// schedule, each stage also waits for its sends to be taken: a longer step, more of it exposed transfers.
TEST(StackPpOverlap, TheInterleavedLockStepExposesItsTransfers)
{
  if (dtsim::test::dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  const std::string set = " --set stack=" + source_path("tests/unit/data/stack-pp-by-schedule.yaml") +
                          " --set hardware=" + source_path("tests/unit/data/slow-network.yaml") +
                          " --set schedule=interleaved-1f1b --set parallel.vpp=2 --set training.global_batch=8";
  const auto lock_step = dtsim::test::run_json("tests/unit/data/pipeline.yaml", set);
  const auto async = dtsim::test::run_json("tests/unit/data/pipeline.yaml", set + " --set parallel.pp_overlap=true");
  const double step_l = lock_step.at("step_time_s").get<double>(), step_a = async.at("step_time_s").get<double>();
  const double exposed_l = lock_step.at("breakdown").at("exposed_pp_comm_s").get<double>();
  const double exposed_a = async.at("breakdown").at("exposed_pp_comm_s").get<double>();
  std::printf("[pp by schedule] asynchronous %.9g s (exposed %.6g s), lock-step %.9g s (exposed %.6g s)\n", step_a,
              exposed_a, step_l, exposed_l);
  EXPECT_GT(step_l, step_a);
  EXPECT_GT(exposed_l, exposed_a);
}

}  // namespace
