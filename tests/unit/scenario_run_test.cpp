// End to end on scenarios/tiny.yaml: the breakdown is a partition of the step time (replay.hpp: "the parts add
// up to the step time"), throughput is global_batch / step time, MFU = model FLOP/s / peak (Narayanan 2021;
// Chowdhery et al. 2022), the JSON report is deterministic, and folded and full fidelity agree.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "app/simulate.hpp"
#include "report/run_formats.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::test::rel_diff;
using dtsim::test::source_path;
using dtsim::test::dtsim_binary;
using dtsim::test::run_capture;
using dtsim::test::CommandResult;

void expect_partition(const dtsim::replay::Breakdown& b, double step, const std::string& what)
{
  SCOPED_TRACE(what);
  for (double part : {b.compute_s, b.recompute_s, b.exposed_tp_comm_s, b.exposed_pp_comm_s, b.exposed_dp_comm_s,
                      b.exposed_ep_comm_s, b.exposed_cp_comm_s, b.bubble_s, b.optimizer_s, b.stack_overhead_s,
                      b.step_collectives_s})
    EXPECT_GE(part, 0.0);
  EXPECT_LE(b.recompute_s, b.compute_s);
  // Every part counts, the stack's fixed per-step overhead included where the stack has one.
  const double sum = b.compute_s + b.exposed_tp_comm_s + b.exposed_pp_comm_s + b.exposed_dp_comm_s +
                     b.exposed_ep_comm_s + b.exposed_cp_comm_s + b.bubble_s + b.optimizer_s + b.stack_overhead_s +
                     b.step_collectives_s;
  EXPECT_LT(rel_diff(sum, step), 1e-9) << "parts add up to " << sum << " s, step is " << step << " s";
}

// One simulate() call: one SimGrid engine in this process.
TEST(TinyScenario, BreakdownThroughputAndJson)
{
  auto s = dtsim::scenario::load_scenario(source_path("scenarios/tiny.yaml"), {});
  auto r = dtsim::app::simulate(s, false);
  ASSERT_TRUE(r.simulated);
  const double step = r.replay.step_time_s;
  ASSERT_GT(step, 0.0);
  expect_partition(r.replay.average, step, "average");
  ASSERT_EQ(r.replay.per_stage.size(), size_t(s.parallel.pp));
  for (size_t i = 0; i < r.replay.per_stage.size(); ++i)
    expect_partition(r.replay.per_stage[i], step, "stage " + std::to_string(i));

  std::ostringstream a, b;
  dtsim::report::run_format("json").write(a, dtsim::report::make_record(r));
  dtsim::report::run_format("json").write(b, dtsim::report::make_record(r));
  EXPECT_EQ(a.str(), b.str());  // byte-identical

  auto j = nlohmann::json::parse(a.str());
  EXPECT_DOUBLE_EQ(j.at("step_time_s").get<double>(), step);
  const double samples = j.at("samples_per_s").get<double>();
  EXPECT_LT(rel_diff(samples, 64.0 / step), 1e-12);  // global_batch 64 in tiny.yaml
  EXPECT_LT(rel_diff(j.at("tokens_per_s").get<double>(), samples * 512.0), 1e-12);  // seq_len 512
  // MFU: model FLOPs per second per device over the bf16 peak of an A100 (312 TFLOP/s), 16 devices.
  const double mfu = r.model_flops / step / 16.0 / 312e12;
  EXPECT_LT(rel_diff(j.at("mfu").get<double>(), mfu), 1e-12);
  EXPECT_GT(mfu, 0.0);
  EXPECT_LT(mfu, 1.0);
  // The JSON breakdown is the replay's average.
  const auto& jb = j.at("breakdown");
  EXPECT_DOUBLE_EQ(jb.at("compute_s").get<double>(), r.replay.average.compute_s);
  EXPECT_DOUBLE_EQ(jb.at("bubble_s").get<double>(), r.replay.average.bubble_s);
  std::printf("[tiny] step %.9g s, %.4g samples/s, MFU %.4f, compute %.6g s, bubble %.6g s, tp %.6g s, pp %.6g s, "
              "dp %.6g s, optimizer %.6g s\n",
              step, samples, mfu, r.replay.average.compute_s, r.replay.average.bubble_s,
              r.replay.average.exposed_tp_comm_s, r.replay.average.exposed_pp_comm_s,
              r.replay.average.exposed_dp_comm_s, r.replay.average.optimizer_s);
}

// ---- binary-level checks: each dtsim process runs its own engine ------------------------------------------

// Path of the dtsim binary from DTSIM_BINARY (set by tests/CMakeLists.txt); empty when unset or not built yet
// (building only the dtsim_tests target does not build dtsim).
// Runs a command, returns its stdout; fails the test when it exits non-zero.
std::string run_command(const std::string& cmd)
{
  auto r = run_capture(cmd);
  EXPECT_EQ(r.rc, 0) << cmd;
  return r.out;
}

std::string run_tiny_text(const std::string& extra)
{
  return run_command("'" + dtsim_binary() + "' run '" + source_path("scenarios/tiny.yaml") + "' --format json" +
                     extra);
}

TEST(DtsimBinary, JsonIsByteIdenticalAcrossRuns)
{
  if (dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  const std::string first = run_tiny_text(""), second = run_tiny_text("");
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first, second);
}

TEST(DtsimBinary, FoldedAndFullFidelityAgree)
{
  if (dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  auto folded = nlohmann::json::parse(run_tiny_text(""));
  auto full = nlohmann::json::parse(run_tiny_text(" --set simulation.fidelity=full"));
  ASSERT_EQ(folded.at("plan").at("fidelity"), "folded");
  ASSERT_EQ(full.at("plan").at("fidelity"), "full");
  const double a = folded.at("step_time_s").get<double>(), b = full.at("step_time_s").get<double>();
  std::printf("[fidelity] folded %.9g s (%lld devices simulated), full %.9g s (%lld devices simulated)\n", a,
              (long long)folded.at("simulation").at("simulated_devices").get<int64_t>(), b,
              (long long)full.at("simulation").at("simulated_devices").get<int64_t>());
  EXPECT_LT(rel_diff(a, b), 0.01) << "folded " << a << " s, full " << b << " s";
  EXPECT_EQ(full.at("simulation").at("simulated_devices").get<int64_t>(), 16);
}

// tp 8 in a node, pipeline neighbours and data-parallel peers in other nodes: the folded replay times the
// tensor-parallel collectives in closed form (no other traffic shares those NVLink links); the full replay runs
// every ring edge as a flow. Both must agree to rounding (SimGrid's, on flow sizes scaled by the protocol's share).
TEST(DtsimBinary, FoldedClosedFormCollectivesMatchFullFlows)
{
  if (dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  const std::string plan = " --set devices=32 --set parallel.tp=8 --set parallel.pp=2 --set parallel.dp=2";
  auto folded = nlohmann::json::parse(run_tiny_text(plan));
  auto full = nlohmann::json::parse(run_tiny_text(plan + " --set simulation.fidelity=full"));
  const double a = folded.at("step_time_s").get<double>(), b = full.at("step_time_s").get<double>();
  const double ta = folded.at("breakdown").at("exposed_tp_comm_s").get<double>();
  const double tb = full.at("breakdown").at("exposed_tp_comm_s").get<double>();
  std::printf("[closed form] folded %.12g s (TP %.9g s, %lld activities), full %.12g s (TP %.9g s, %lld activities)\n",
              a, ta, (long long)folded.at("simulation").at("activities").get<int64_t>(), b, tb,
              (long long)full.at("simulation").at("activities").get<int64_t>());
  EXPECT_LT(rel_diff(a, b), 1e-6);
  EXPECT_LT(rel_diff(ta, tb), 1e-6);
  EXPECT_GT(ta, 0.0);
}

}  // namespace
