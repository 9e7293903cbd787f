// The run record (issue 31): it travels from a child process as CBOR and comes back exactly, keys in order and every
// number to the last bit, with the table's rows and the trace; the table is written from it alone.
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "app/simulate.hpp"
#include "core/child_process.hpp"
#include "report/run_record.hpp"
#include "report/table_writer.hpp"
#include "report/trace_writer.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"
#include "tiny_scenario.hpp"

namespace {

using dtsim::report::RunRecord;

// Numbers that text could round (0.1, 1/3, 1e-300), integers of both signs, a null, nesting, and a string longer
// than a pipe holds (64 KiB) so that the child writes it in several pieces.
RunRecord awkward_record()
{
  RunRecord r;
  r.document["step_time_s"] = 0.1;
  r.document["third"] = 1.0 / 3.0;
  r.document["tiny"] = 1e-300;
  r.document["devices"] = 4096;
  r.document["offset"] = -7;
  r.document["interval"] = nullptr;
  r.document["plan"] = {{"tp", 8}, {"schedule", "1f1b"}, {"fits", true}};
  r.document["stages"] = nlohmann::ordered_json::array({1.5, 2.25});
  r.document["note"] = std::string(200000, 'x');
  r.execution = "layer-pipelined";
  r.table.placement = {{"systems", "2 x WSE-2"}, {"execution", "layer-pipelined (fits)"}};
  r.table.recompute = "none";
  r.table.memory_heading = "Memory";
  r.table.memory = {{"fits", "yes"}};
  r.table.breakdown = {{"compute", "compute_s"}, {"exposed on-wafer fabric", "exposed_fabric_s"}};
  r.trace.events = {{-1, 3, "optimizer (MemoryX)", 0.1, 1.0 / 3.0}, {0, 0, "layer 0 forward", 0, 1e-300}};
  r.trace.tracks = {"compute", "on-wafer fabric", "weights in", "gradients out"};
  r.trace.processes = {{-1, "MemoryX"}, {0, "region 0"}};
  return r;
}

TEST(RunRecord, ComesBackFromAChildExactly)
{
  const RunRecord sent = awkward_record();
  const auto bytes = dtsim::run_in_child_bytes([&]() { return dtsim::report::record_to_cbor(sent); });
  ASSERT_TRUE(bytes.has_value());
  const RunRecord got = dtsim::report::record_from_cbor(*bytes);
  EXPECT_EQ(got.document, sent.document);
  EXPECT_EQ(got.document.dump(2), sent.document.dump(2));  // same keys in the same order, same digits
  EXPECT_EQ(got.document["third"].get<double>(), 1.0 / 3.0);
  EXPECT_EQ(got.execution, sent.execution);
  EXPECT_EQ(got.table, sent.table);
  ASSERT_EQ(got.trace.events.size(), sent.trace.events.size());
  for (size_t i = 0; i < sent.trace.events.size(); ++i) {
    const auto &a = got.trace.events[i], &b = sent.trace.events[i];
    EXPECT_TRUE(a.device == b.device && a.track == b.track && a.name == b.name && a.start == b.start &&
                a.end == b.end)
        << "event " << i;
  }
  EXPECT_EQ(got.trace.tracks, sent.trace.tracks);
  EXPECT_EQ(got.trace.processes, sent.trace.processes);
}

// One simulate() call: one SimGrid engine in this process.
TEST(RunRecord, OfASimulatedRunRoundTripsThroughCbor)
{
  auto s = dtsim::scenario::load_scenario(dtsim::test::source_path("scenarios/tiny.yaml"), {});
  const RunRecord made = dtsim::report::make_record(dtsim::app::simulate(s, false));
  ASSERT_TRUE(made.document.contains("breakdown_per_stage"));
  const auto bytes = dtsim::report::record_to_cbor(made);
  const RunRecord back = dtsim::report::record_from_cbor(bytes);
  EXPECT_EQ(back.document, made.document);
  EXPECT_EQ(back.document.dump(2), made.document.dump(2));
  EXPECT_EQ(back.execution, "");  // a GPU cluster has no execution mode to choose
  EXPECT_EQ(dtsim::report::record_to_cbor(back), bytes);
}

// The table reads the record alone: the same table from the record that came back through CBOR, and a figure
// changed in the document shows in the table (it is not recomputed from the run). One simulate() call.
TEST(RunRecord, TheTableIsWrittenFromTheRecordAlone)
{
  auto s = dtsim::scenario::load_scenario(dtsim::test::source_path("scenarios/tiny.yaml"), {"training.tokens=1e9"});
  RunRecord made = dtsim::report::make_record(dtsim::app::simulate(s, false));
  std::ostringstream table, back;
  dtsim::report::write_table(table, made);
  dtsim::report::write_table(back, dtsim::report::record_from_cbor(dtsim::report::record_to_cbor(made)));
  EXPECT_EQ(back.str(), table.str());
  EXPECT_NE(table.str().find("Time to train 1B tokens (30518 steps)"), std::string::npos) << table.str();

  made.document["step_time_s"] = 12.5;
  made.document["time_to_train_s"] = 86400.0 * 3;
  std::ostringstream changed;
  dtsim::report::write_table(changed, made);
  EXPECT_NE(changed.str().find("step time                    12.5000 s"), std::string::npos) << changed.str();
  EXPECT_NE(changed.str().find("time to train                3.0 days"), std::string::npos) << changed.str();
}

// The run table of tiny GPT with these overrides (one simulate() call).
std::string tiny_table(const std::vector<std::string>& overrides)
{
  const auto s = dtsim::test::tiny_scenario(overrides);
  std::ostringstream table;
  dtsim::report::write_table(table, dtsim::report::make_record(dtsim::app::simulate(s, false)));
  return table.str();
}

// The table's words and units as a reader takes them: tokens counted as parameters are ("1B", not "1 B", which
// reads as a byte), one microbatch in flight in the singular, the checkpoint's size in decimal units beside its
// storage bandwidth (tiny GPT's 3,552,768 parameters x 14 bytes: 49.7 MB), its kind and interval in words, the
// energy in MJ as `dtsim compare` gives it. Tiny GPT on 16 A100 with a global batch of 8: one microbatch per pipeline.
TEST(RunRecord, TheTableSaysWhatItCounts)
{
  const std::string t = tiny_table({"training.tokens=1e9", "training.global_batch=8"});
  EXPECT_NE(t.find("Time to train 1B tokens ("), std::string::npos) << t;
  EXPECT_NE(t.find("(1 microbatch in flight)"), std::string::npos) << t;
  EXPECT_NE(t.find(", 49.7 MB in "), std::string::npos) << t;
  EXPECT_NE(t.find(" ms each, synchronous, interval by Young-Daly)"), std::string::npos) << t;  // a duration
  // Energy per step in MJ, the unit `dtsim compare` gives it in.
  const size_t energy = t.find("  power, energy per step");
  ASSERT_NE(energy, std::string::npos) << t;
  EXPECT_EQ(t.substr(t.find('\n', energy) - 3, 3), " MJ") << t;
}

// A run shorter than a step's tokens is one step, its tokens counted as they are (it read "0.1K tokens (1 steps)"),
// and a run that never finishes says so once (it read "never: the run never finishes: ...").
TEST(RunRecord, TheTableCountsOneStepAndSaysNeverOnce)
{
  const std::string t = tiny_table({"training.tokens=100", "resilience.device_mtbf=1 s"});
  EXPECT_NE(t.find("Time to train 100 tokens (1 step)\n"), std::string::npos) << t;
  EXPECT_NE(t.find("  time to train                the run never finishes: the job fails every"), std::string::npos)
      << t;
}

// A step under 0.1 s is printed to four significant digits, and its interval and sampled spread to the same
// decimals: the tiny step read "0.0043 s" with a spread of "p5 0.0042 / p50 0.0043 / p95 0.0043 s" (qa15).
TEST(RunRecord, TheSpreadHasTheStepsPrecision)
{
  auto s = dtsim::scenario::load_scenario(dtsim::test::source_path("scenarios/tiny.yaml"),
                                          {"variability.device_spread=0.05", "variability.samples=4"});
  std::ostringstream table;
  const RunRecord record = dtsim::report::make_record(dtsim::app::simulate(s, false));
  dtsim::report::write_table(table, record);
  const std::string t = table.str();
  const double step = record.document.at("step_time_s").get<double>();
  ASSERT_LT(step, 0.01);
  char expected[64];
  std::snprintf(expected, sizeof expected, "step time                    %.6f s\n", step);
  EXPECT_NE(t.find(expected), std::string::npos) << t;
  std::snprintf(expected, sizeof expected, " / p95 %.6f s (seed",
                record.document.at("step_time_spread_s").at("p95").get<double>());
  EXPECT_NE(t.find(expected), std::string::npos) << t;
  EXPECT_EQ(t.find("traced step"), std::string::npos) << t;  // no trace asked for
}

// A sampled run's trace is one step, the first sample's: the table, the JSON and the trace file say which, beside the
// mean the table reports (qa15: the trace of `--samples 8 --trace F` did not say which step it was).
TEST(RunRecord, ASampledRunSaysWhichStepItTraces)
{
  auto s = dtsim::scenario::load_scenario(dtsim::test::source_path("scenarios/tiny.yaml"),
                                          {"variability.device_spread=0.05", "variability.samples=3",
                                           "variability.seed=5"});
  const RunRecord record = dtsim::report::make_record(dtsim::app::simulate(s, true));
  const auto& traced = record.document.at("trace_sample");
  EXPECT_EQ(traced.at("sample"), 1);
  EXPECT_EQ(traced.at("samples"), 3);
  EXPECT_EQ(traced.at("seed"), 5);
  EXPECT_GT(traced.at("step_time_s").get<double>(), 0);
  std::ostringstream table, trace;
  dtsim::report::write_table(table, record);
  const std::string t = table.str();
  const size_t row = t.find("    traced step ");
  ASSERT_NE(row, std::string::npos) << t;
  EXPECT_EQ(t.substr(t.find_first_not_of(' ', row + 15), 24), "sample 1 of 3 (seed 5), ") << t;
  dtsim::report::write_trace(trace, record);
  EXPECT_NE(trace.str().find("\"otherData\":{\"dtsim_traced_step\":\"sample 1 of 3 (seed 5), step "),
            std::string::npos);
}

// One sample: the trace is the step itself, and nothing is added (one simulation per test: one SimGrid engine per
// process).
TEST(RunRecord, AOneSampleTraceAddsNothing)
{
  auto one = dtsim::scenario::load_scenario(dtsim::test::source_path("scenarios/tiny.yaml"), {});
  EXPECT_FALSE(dtsim::report::make_record(dtsim::app::simulate(one, true)).document.contains("trace_sample"));
}

// A row is written whole however long its value: a wafer's reasons (the compiler's recomputation, its micro batch)
// run past 256 characters, and a fixed line buffer once cut them and joined the next row onto them.
TEST(RunRecord, LongRowsAreWrittenWhole)
{
  auto s = dtsim::scenario::load_scenario(dtsim::test::source_path("scenarios/tiny.yaml"), {});
  RunRecord made = dtsim::report::make_record(dtsim::app::simulate(s, false));
  const std::string long_value = std::string(400, 'x') + " end";
  made.table.placement.push_back({"a row with a long value", long_value});
  std::ostringstream table;
  dtsim::report::write_table(table, made);
  EXPECT_NE(table.str().find("  a row with a long value      " + long_value + "\n  batch "), std::string::npos)
      << table.str();
}

// Fewer than ten expected failures are not rounded to none while the work they lose is counted: 0.48 reads as such.
TEST(RunRecord, FewExpectedFailuresAreNotRoundedToNone)
{
  auto s = dtsim::scenario::load_scenario(dtsim::test::source_path("scenarios/tiny.yaml"), {"training.tokens=1e9"});
  RunRecord made = dtsim::report::make_record(dtsim::app::simulate(s, false));
  auto failures = [&](double n) {
    made.document["time_to_train"]["expected_failures"] = n;
    std::ostringstream table;
    dtsim::report::write_table(table, made);
    return table.str();
  };
  EXPECT_NE(failures(0.4801).find(", 0.48 failures expected)"), std::string::npos) << failures(0.4801);
  EXPECT_NE(failures(620.4).find(", 620 failures expected)"), std::string::npos) << failures(620.4);
}

// A wafer's table shows only what applies to it: no tensor-parallel term (a wafer has no tensor parallelism), and
// one system is "1 device" with no fidelity (there is nothing to fold). One simulate() call.
TEST(RunRecord, TheWaferTableShowsOnlyWhatAppliesToAWafer)
{
  auto w = dtsim::scenario::load_scenario(dtsim::test::source_path("scenarios/wafer/gpt2-small-cs2.yaml"), {});
  std::ostringstream wafer;
  dtsim::report::write_table(wafer, dtsim::report::make_record(dtsim::app::simulate(w, false)));
  EXPECT_EQ(wafer.str().find("exposed TP communication"), std::string::npos) << wafer.str();
  EXPECT_NE(wafer.str().find("  simulated                    1 device, "), std::string::npos) << wafer.str();
}

// The GPU table keeps the tensor-parallel term and says how its 16 GPUs were simulated. One simulate() call.
TEST(RunRecord, TheGpuTableKeepsTensorParallelismAndFidelity)
{
  auto g = dtsim::scenario::load_scenario(dtsim::test::source_path("scenarios/tiny.yaml"), {});
  std::ostringstream gpu;
  dtsim::report::write_table(gpu, dtsim::report::make_record(dtsim::app::simulate(g, false)));
  EXPECT_NE(gpu.str().find("exposed TP communication"), std::string::npos) << gpu.str();
  EXPECT_NE(gpu.str().find(" devices ("), std::string::npos) << gpu.str();
}

TEST(RunRecord, BytesThatAreNoRecordAreRefused)
{
  EXPECT_ANY_THROW(dtsim::report::record_from_cbor({0xff, 0x00}));
  EXPECT_ANY_THROW(dtsim::report::record_from_cbor(nlohmann::ordered_json::to_cbor({{"document", 1}})));
}

}  // namespace
