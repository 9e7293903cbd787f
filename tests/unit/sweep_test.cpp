// dtsim sweep (issue "Studies", section 1): value lists and ranges, refusal of empty, contradictory and unknown-key
// sweeps before anything runs, one row per point with failing points recorded, resume after a stop, and final files
// that do not depend on the number of jobs. The simulations run in child processes, so one test may sweep often.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/sweep.hpp"
#include "core/diagnostics.hpp"
#include "test_paths.hpp"

namespace {

namespace fs = std::filesystem;
using dtsim::ConfigError;
using dtsim::app::expand_values;
using dtsim::app::sweep;
using dtsim::app::SweepOptions;
using dtsim::test::source_path;
using Strings = std::vector<std::string>;

std::string temp_dir()
{
  std::string t = (fs::temp_directory_path() / "dtsim-sweep-XXXXXX").string();
  const char* d = mkdtemp(t.data());
  if (!d)
    throw std::runtime_error("mkdtemp failed");
  return d;
}

using dtsim::test::read_whole_file;

Strings lines_of(const std::string& text)
{
  Strings out;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);)
    out.push_back(l);
  return out;
}

SweepOptions tiny_sweep(const std::string& prefix, int jobs = 1)
{
  SweepOptions o;
  o.scenario = source_path("tests/unit/data/sweep/tiny-8.yaml");
  o.vary = {"parallel.tp=1,2,3", "training.micro_batch=1,2"};  // tp 3 does not divide the 8 devices
  o.out_prefix = prefix;
  o.jobs = jobs;
  return o;
}

// Runs a sweep; returns its log and checks the exit code.
std::string run_sweep(const SweepOptions& o)
{
  std::ostringstream log;
  EXPECT_EQ(sweep(o, log), 0);
  return log.str();
}

// The number of points a run computed, from its summary line "sweep: ran N points ...".
int points_run(const std::string& log)
{
  std::smatch m;
  if (!std::regex_search(log, m, std::regex("sweep: ran ([0-9]+) point")))
    return -1;
  return std::stoi(m[1]);
}

// Expects the sweep to be refused with a diagnostic from `origin` whose text holds `what`.
void expect_refused(const SweepOptions& o, const std::string& origin, const std::string& what)
{
  std::ostringstream log;
  try {
    sweep(o, log);
    ADD_FAILURE() << "the sweep was not refused; expected " << what;
  } catch (const ConfigError& e) {
    ASSERT_FALSE(e.items().empty());
    EXPECT_EQ(e.items().front().where.file, origin) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(SweepValues, ListsRangesAndUnits)
{
  EXPECT_EQ(expand_values("1,2,4"), (Strings{"1", "2", "4"}));
  EXPECT_EQ(expand_values(" 1 , 2 "), (Strings{"1", "2"}));
  EXPECT_EQ(expand_values("8..64x2"), (Strings{"8", "16", "32", "64"}));
  EXPECT_EQ(expand_values("8..3072x2"),
            (Strings{"8", "16", "32", "64", "128", "256", "512", "1024", "2048"}));  // up to the bound
  EXPECT_EQ(expand_values("1..10+3"), (Strings{"1", "4", "7", "10"}));
  EXPECT_EQ(expand_values("2..9+3"), (Strings{"2", "5", "8"}));
  EXPECT_EQ(expand_values("1..3"), (Strings{"1", "2", "3"}));
  EXPECT_EQ(expand_values("5..5x2"), (Strings{"5"}));
  EXPECT_EQ(expand_values("1,4..16x2,100"), (Strings{"1", "4", "8", "16", "100"}));
  EXPECT_EQ(expand_values("200 Gb/s,400 Gb/s"), (Strings{"200 Gb/s", "400 Gb/s"}));  // units kept as text
  EXPECT_EQ(expand_values("1.5 us,selective,true"), (Strings{"1.5 us", "selective", "true"}));
  EXPECT_EQ(expand_values("100..400x2 Gb/s"), (Strings{"100 Gb/s", "200 Gb/s", "400 Gb/s"}));
  EXPECT_EQ(expand_values("100 GB/s..300 GB/s+100"), (Strings{"100 GB/s", "200 GB/s", "300 GB/s"}));
}

TEST(SweepValues, MalformedListsAreErrors)
{
  for (const char* bad : {"", " ", "1,,2", "1,2,", "1,1", "1,1..3", "8..4x2", "1..8x1", "0..8x2", "1..8+0", "a..b",
                          "1..8y2", "1.5..3", "1..8x2 furlongs", "1 GB/s..8 W x2"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(expand_values(bad), ConfigError);
  }
  try {
    expand_values("8..4x2");
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("A..BxF"), std::string::npos) << e.what();
  }
}

TEST(SweepRefusal, EmptyContradictoryUnknownKeyBeforeRunning)
{
  const std::string dir = temp_dir();
  SweepOptions o = tiny_sweep(dir + "/out");

  o.vary = {};
  expect_refused(o, "--vary", "expected at least one --vary");
  o.vary = {"parallel.tp="};
  expect_refused(o, "--vary parallel.tp=", "expected a list of values");
  o.vary = {"parallel.tp"};
  expect_refused(o, "--vary parallel.tp", "expected KEY=V1,V2");

  o.vary = {"parallel.tp=1,2", "training.micro_batch=1,2", "parallel.tp=4"};
  expect_refused(o, "--vary parallel.tp=4", "parallel.tp: varied twice (also by --vary parallel.tp=1,2)");

  o.vary = {"parallel={tp: 2}", "parallel.tp=1,2"};
  expect_refused(o, "--vary parallel.tp=1,2",
                 "varied together with parallel (--vary parallel={tp: 2}), which contains it");
  o.vary = {"devices=8,16", "parallel.dp=8,16"};
  expect_refused(o, "--vary parallel.dp=8,16", "parallel.dp is determined by devices / (tp x pp)");

  o.vary = {"parallel.tpp=1,2"};
  expect_refused(o, "--vary parallel.tpp=1,2",
                 "parallel.tpp: not a key of the scenario: unknown key 'tpp'; did you mean 'pp'?");
  o.vary = {"training.micro_batch=1,2", "foo.bar=1"};
  expect_refused(o, "--vary foo.bar=1", "foo.bar: not a key of the scenario: unknown key 'foo'");
  o.vary = {"devices.count=8,16"};
  expect_refused(o, "--vary devices.count=8,16", "cannot be set");
  o.vary = {"hardware.network.nic.bandwith=100 Gb/s,200 Gb/s"};
  expect_refused(o, "--vary hardware.network.nic.bandwith=100 Gb/s,200 Gb/s",
                 "unknown key 'bandwith'; did you mean 'bandwidth'?");
  o.vary = {"model.hidden_sise=128,256"};
  expect_refused(o, "--vary model.hidden_sise=128,256", "unknown key 'hidden_sise'");
  o.vary = {"parallel.tp=1..8x1"};
  expect_refused(o, "--vary parallel.tp=1..8x1", "factor of at least 2");
  // A value without its unit, or with another quantity's, fails at every point: refused before running (qa15: a
  // whole sweep of input-error rows, exit 0).
  o.vary = {"parallel.tp=1,2", "resilience.restart=10 min,600"};
  expect_refused(o, "--vary resilience.restart=10 min,600", "got bare number '600' (units are mandatory)");
  o.vary = {"resilience.checkpoint_bandwidth=1 GB/s,2 GB"};
  expect_refused(o, "--vary resilience.checkpoint_bandwidth=1 GB/s,2 GB", "unknown unit 'GB' in '2 GB'");

  o.vary = {"parallel.tp=1,2"};
  o.scenario = dir + "/no-such-scenario.yaml";
  expect_refused(o, o.scenario, "cannot read file");

  o.scenario = source_path("tests/unit/data/sweep/malformed.yaml");
  expect_refused(o, o.scenario, "malformed YAML");

  EXPECT_TRUE(fs::is_empty(dir)) << "a refused sweep wrote files";  // nothing ran
  fs::remove_all(dir);
}

// A what-if on a hardware quantity: the NIC bandwidth is set in a copy of the hardware file for each point. On two
// nodes with dp 2 across them (scenarios/tiny.yaml: tp 2 x pp 4 in a node), only the exposed data-parallel
// communication moves, and it shrinks as the NICs get faster; the model and the hardware keep their names.
TEST(Sweep, WhatIfOnAHardwareQuantityMovesTheDataParallelPart)
{
  const std::string dir = temp_dir();
  SweepOptions o;
  o.scenario = source_path("scenarios/tiny.yaml");
  o.vary = {"hardware.network.nic.bandwidth=100 Gb/s,800 Gb/s"};
  o.out_prefix = dir + "/nic";
  run_sweep(o);
  const Strings rows = lines_of(read_whole_file(dir + "/nic.jsonl"));
  ASSERT_EQ(rows.size(), 2u);
  auto slow = nlohmann::json::parse(rows[0]), fast = nlohmann::json::parse(rows[1]);
  ASSERT_EQ(slow["status"], "ok") << rows[0];
  ASSERT_EQ(fast["status"], "ok") << rows[1];
  EXPECT_EQ(slow["vary"]["hardware.network.nic.bandwidth"], "100 Gb/s");
  EXPECT_GT(slow["step_time_s"].get<double>(), fast["step_time_s"].get<double>());
  EXPECT_GT(slow["breakdown"]["exposed_dp_comm_s"].get<double>(), fast["breakdown"]["exposed_dp_comm_s"].get<double>());
  // the same kernels; summed in another event order (the links differ), so equal to the last bits only
  // (to rounding: kernels beside an all-reduce are summed in the order their pieces end)
  EXPECT_LT(dtsim::test::rel_diff(slow["breakdown"]["compute_s"].get<double>(),
                                  fast["breakdown"]["compute_s"].get<double>()),
            1e-12);
  EXPECT_EQ(slow["model"], "tiny-gpt");
  EXPECT_EQ(slow["hardware"], fast["hardware"]);
  fs::remove_all(dir);
}

// Several scenario files make an outermost axis "scenario": here one node (tiny-8) and two nodes (tiny), each with
// two micro batches.
TEST(Sweep, SeveralScenariosAreAnAxis)
{
  const std::string dir = temp_dir();
  SweepOptions o;
  o.scenario = source_path("tests/unit/data/sweep/tiny-8.yaml");
  o.more_scenarios = {source_path("scenarios/tiny.yaml")};
  o.vary = {"training.micro_batch=1,2"};
  o.out_prefix = dir + "/two";
  const std::string log = run_sweep(o);
  EXPECT_NE(log.find("4 points (scenario: 2 x training.micro_batch: 2)"), std::string::npos) << log;
  const Strings rows = lines_of(read_whole_file(dir + "/two.jsonl"));
  ASSERT_EQ(rows.size(), 4u);
  const Strings names = {"tiny GPT on 8 A100", "tiny GPT on 8 A100", "tiny GPT on 16 A100", "tiny GPT on 16 A100"};
  for (size_t i = 0; i < rows.size(); ++i) {
    auto j = nlohmann::json::parse(rows[i]);
    EXPECT_EQ(j["status"], "ok") << rows[i];
    EXPECT_EQ(j["scenario"], names[i]);
    EXPECT_EQ(j["vary"]["scenario"], i < 2 ? o.scenario : o.more_scenarios[0]);
    EXPECT_EQ(j["plan"]["micro_batch"].get<int>(), int(i % 2) + 1);
  }
  o.more_scenarios = {o.scenario};
  expect_refused(o, o.scenario, "the scenario file is given twice");
  o.more_scenarios = {};
  o.vary = {"scenario=a.yaml,b.yaml"};
  expect_refused(o, "--vary scenario=a.yaml,b.yaml", "give their files one after the other");
  fs::remove_all(dir);
}

// Keys joined by ';' in one --vary move together (weak scaling: the batch grows with the devices) and make no
// product: 2 x (2 linked) = 4 points, not 8.
TEST(Sweep, LinkedKeysMoveTogether)
{
  const std::string dir = temp_dir();
  SweepOptions o;
  o.scenario = source_path("tests/unit/data/sweep/tiny-8.yaml");
  o.vary = {"training.micro_batch=1,2", "parallel.tp=1,2;training.global_batch=16,32"};
  o.out_prefix = dir + "/linked";
  const std::string log = run_sweep(o);
  EXPECT_NE(log.find("4 points (training.micro_batch: 2 x parallel.tp: 2 with training.global_batch)"),
            std::string::npos) << log;
  const Strings rows = lines_of(read_whole_file(dir + "/linked.jsonl"));
  ASSERT_EQ(rows.size(), 4u);
  const Strings tp = {"1", "2", "1", "2"}, gb = {"16", "32", "16", "32"};
  for (size_t i = 0; i < rows.size(); ++i) {
    auto j = nlohmann::json::parse(rows[i]);
    EXPECT_EQ(j["status"], "ok") << rows[i];
    EXPECT_EQ(j["vary"]["parallel.tp"], tp[i]);
    EXPECT_EQ(j["vary"]["training.global_batch"], gb[i]);
    EXPECT_EQ(j["plan"]["global_batch"].get<int>(), std::stoi(gb[i]));
  }
  o.vary = {"parallel.tp=1,2;training.global_batch=16,32,64"};
  expect_refused(o, "--vary parallel.tp=1,2;training.global_batch=16,32,64",
                 "training.global_batch: expected as many values as parallel.tp (2), with which it moves, got 3");
  // devices and dp may move together, as long as they are linked
  o.vary = {"devices=8;parallel.dp=8"};
  o.out_prefix = dir + "/dp";
  run_sweep(o);
  fs::remove_all(dir);
}

TEST(Sweep, OneRowPerPointAndFailuresRecorded)
{
  const std::string dir = temp_dir();
  const std::string log = run_sweep(tiny_sweep(dir + "/tiny"));
  EXPECT_EQ(points_run(log), 6) << log;
  EXPECT_NE(log.find("6 points (parallel.tp: 3 x training.micro_batch: 2)"), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(dir + "/tiny.partial.jsonl"));  // the journal is gone once the final files are written
  EXPECT_FALSE(fs::exists(dir + "/tiny.points"));

  const Strings jsonl = lines_of(read_whole_file(dir + "/tiny.jsonl"));
  ASSERT_EQ(jsonl.size(), 6u);
  const Strings tp = {"1", "1", "2", "2", "3", "3"}, mb = {"1", "2", "1", "2", "1", "2"};
  for (size_t i = 0; i < jsonl.size(); ++i) {
    SCOPED_TRACE(jsonl[i]);
    auto j = nlohmann::json::parse(jsonl[i]);
    EXPECT_EQ(j["point"].get<int>(), int(i));  // sorted by point index, last --vary innermost
    EXPECT_EQ(j["vary"]["parallel.tp"], tp[i]);
    EXPECT_EQ(j["vary"]["training.micro_batch"], mb[i]);
    if (tp[i] == "3") {
      EXPECT_EQ(j["status"], "input-error");
      const std::string reason = j["reason"];
      EXPECT_NE(reason.find("error: parallel.dp: cannot derive dp"), std::string::npos);  // the ConfigError text
      EXPECT_NE(reason.find("tp * pp = 3"), std::string::npos);
      EXPECT_FALSE(j.contains("step_time_s"));
    } else {
      EXPECT_EQ(j["status"], "ok");
      EXPECT_EQ(j["reason"], "");
      // Every output of `dtsim run --format json`, arrays included.
      EXPECT_EQ(j["plan"]["tp"].get<int>(), std::stoi(tp[i]));
      EXPECT_EQ(j["plan"]["micro_batch"].get<int>(), std::stoi(mb[i]));
      EXPECT_GT(j["step_time_s"].get<double>(), 0.0);
      EXPECT_TRUE(j["memory"]["stages"].is_array());
      EXPECT_TRUE(j["breakdown_per_stage"].is_array());
      EXPECT_TRUE(j.contains("dtsim_version"));
    }
  }

  const Strings csv = lines_of(read_whole_file(dir + "/tiny.csv"));
  ASSERT_GE(csv.size(), 2u);
  const std::string& header = csv.front();
  EXPECT_EQ(header.rfind("point,vary.parallel.tp,vary.training.micro_batch,status,reason,", 0), 0u) << header;
  for (const char* column : {",plan.tp,", ",step_time_s,", ",breakdown.compute_s,", ",memory.peak_bytes_per_device,",
                             ",simulation.activities"})
    EXPECT_NE(header.find(column), std::string::npos) << column;
  EXPECT_EQ(header.find("memory.stages"), std::string::npos);
  EXPECT_EQ(header.find("breakdown_per_stage"), std::string::npos);
  // The failing rows carry a multi-line reason: quoted, so the CSV still has one record per point.
  size_t records = 0;
  bool quoted = false;
  for (char c : read_whole_file(dir + "/tiny.csv")) {
    quoted ^= c == '"';
    records += c == '\n' && !quoted;
  }
  EXPECT_EQ(records, 7u);
  EXPECT_EQ(csv[1].rfind("0,1,1,ok,,", 0), 0u) << csv[1];
  fs::remove_all(dir);
}

TEST(Sweep, PlanThatDoesNotFitIsRecorded)
{
  const std::string dir = temp_dir();
  SweepOptions o;
  o.scenario = source_path("tests/unit/data/sweep/gpt3-on-8.yaml");
  o.vary = {"parallel.tp=4,8"};
  o.out_prefix = dir + "/big";
  const std::string log = run_sweep(o);
  EXPECT_NE(log.find("2 does-not-fit"), std::string::npos) << log;
  for (const auto& line : lines_of(read_whole_file(dir + "/big.jsonl"))) {
    auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["status"], "does-not-fit");
    EXPECT_NE(j["reason"].get<std::string>().find("80 GiB"), std::string::npos) << line;
    EXPECT_EQ(j["fits"], false);
    EXPECT_EQ(j["reason"], j["why_not_fitting"]);
  }
  fs::remove_all(dir);
}

TEST(Sweep, ResumeComputesOnlyMissingPointsAndGivesTheSameFiles)
{
  const std::string dir = temp_dir();
  const std::string whole = dir + "/whole", stopped = dir + "/stopped";
  EXPECT_EQ(points_run(run_sweep(tiny_sweep(whole))), 6);
  EXPECT_EQ(points_run(run_sweep(tiny_sweep(stopped))), 6);

  // A stop after three points, the last one cut in the middle of its line: the journal holds two finished rows.
  const Strings rows = lines_of(read_whole_file(stopped + ".jsonl"));
  {
    std::ofstream journal(stopped + ".partial.jsonl", std::ios::binary);
    journal << rows[0] << "\n" << rows[3] << "\n" << rows[4].substr(0, rows[4].size() / 2);
  }
  fs::remove(stopped + ".jsonl");
  fs::remove(stopped + ".csv");

  const std::string log = run_sweep(tiny_sweep(stopped));
  EXPECT_NE(log.find("2 already done"), std::string::npos) << log;
  EXPECT_EQ(points_run(log), 4) << log;
  EXPECT_EQ(read_whole_file(stopped + ".jsonl"), read_whole_file(whole + ".jsonl"));
  EXPECT_EQ(read_whole_file(stopped + ".csv"), read_whole_file(whole + ".csv"));
  EXPECT_FALSE(fs::exists(stopped + ".partial.jsonl"));

  // A finished sweep run again computes nothing and leaves its files as they were.
  EXPECT_EQ(points_run(run_sweep(tiny_sweep(stopped))), 0);
  EXPECT_EQ(read_whole_file(stopped + ".jsonl"), read_whole_file(whole + ".jsonl"));
  EXPECT_EQ(read_whole_file(stopped + ".csv"), read_whole_file(whole + ".csv"));

  // A row kept by a stop between a child's row file and the journal is picked up too.
  fs::create_directories(stopped + ".points");
  {
    std::ofstream point(stopped + ".points/5.json", std::ios::binary);
    point << rows[5] << "\n";
  }
  {
    std::ofstream journal(stopped + ".partial.jsonl", std::ios::binary);
    journal << rows[1] << "\n";
  }
  fs::remove(stopped + ".jsonl");
  EXPECT_EQ(points_run(run_sweep(tiny_sweep(stopped))), 4);
  EXPECT_EQ(read_whole_file(stopped + ".jsonl"), read_whole_file(whole + ".jsonl"));
  EXPECT_EQ(read_whole_file(stopped + ".csv"), read_whole_file(whole + ".csv"));

  // Other arguments with the same output: refused, the finished rows are kept.
  SweepOptions other = tiny_sweep(stopped);
  other.vary = {"parallel.tp=1,4", "training.micro_batch=1,2"};
  expect_refused(other, "--out " + stopped, "are not points of this sweep");
  EXPECT_EQ(read_whole_file(stopped + ".jsonl"), read_whole_file(whole + ".jsonl"));
  fs::remove_all(dir);
}

TEST(Sweep, SameFilesWhateverTheJobs)
{
  const std::string dir = temp_dir();
  EXPECT_EQ(points_run(run_sweep(tiny_sweep(dir + "/one", 1))), 6);
  EXPECT_EQ(points_run(run_sweep(tiny_sweep(dir + "/two", 2))), 6);
  EXPECT_EQ(points_run(run_sweep(tiny_sweep(dir + "/four", 4))), 6);
  const std::string jsonl = read_whole_file(dir + "/one.jsonl"), csv = read_whole_file(dir + "/one.csv");
  EXPECT_FALSE(jsonl.empty());
  EXPECT_EQ(read_whole_file(dir + "/two.jsonl"), jsonl);
  EXPECT_EQ(read_whole_file(dir + "/two.csv"), csv);
  EXPECT_EQ(read_whole_file(dir + "/four.jsonl"), jsonl);
  EXPECT_EQ(read_whole_file(dir + "/four.csv"), csv);
  fs::remove_all(dir);
}

TEST(Sweep, QuietWritesNothingAndProgressIsPlainOffATerminal)
{
  const std::string dir = temp_dir();
  SweepOptions o = tiny_sweep(dir + "/q");
  o.quiet = true;
  std::ostringstream quiet;
  EXPECT_EQ(sweep(o, quiet), 0);
  EXPECT_EQ(quiet.str(), "");
  const std::string log = run_sweep(tiny_sweep(dir + "/p"));
  EXPECT_EQ(log.find('\r'), std::string::npos);  // not a terminal: plain lines
  EXPECT_NE(log.find("sweep: 6/6 points (100%)"), std::string::npos) << log;
  fs::remove_all(dir);
}

}  // namespace
