// dtsim plot: the CSV reader, the parsing of x values with units, the charts of each kind (through gnuplot) and
// the messages of bad input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/plot.hpp"
#include "core/diagnostics.hpp"
#include "test_paths.hpp"

namespace fs = std::filesystem;
using dtsim::app::numeric_axis;
using dtsim::app::parse_axis_value;
using dtsim::app::parse_csv;
using dtsim::app::plot;
using dtsim::app::PlotOptions;
using dtsim::test::source_path;

namespace {

std::string data(const std::string& name) { return source_path("tests/unit/data/plot/" + name); }

/// A fresh directory for the outputs of one test.
fs::path out_dir(const std::string& name)
{
  fs::path d = fs::temp_directory_path() / ("dtsim-plot-test-" + std::to_string(getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::uintmax_t size_of(const fs::path& p)
{
  std::error_code ec;
  auto n = fs::file_size(p, ec);
  return ec ? 0 : n;
}

using dtsim::test::read_whole_file;

bool have_gnuplot() { return access("/usr/bin/gnuplot", X_OK) == 0; }

/// The charts drawn through gnuplot: skipped where it is not installed.
class PlotChart : public ::testing::Test {
 protected:
  void SetUp() override
  {
    if (!have_gnuplot())
      GTEST_SKIP() << "/usr/bin/gnuplot is not installed (Debian: gnuplot-nox)";
  }
};

/// Runs `dtsim plot` on a sample and checks that it made a non-empty SVG and PNG; returns the log.
std::string render(const std::string& csv, const std::string& kind, const std::string& name,
                   std::string* script = nullptr)
{
  PlotOptions o;
  o.csv = data(csv);
  o.kind = kind;
  o.out_prefix = (out_dir(name) / name).string();
  std::ostringstream log;
  int rc = plot(o, log);
  EXPECT_EQ(rc, 0) << log.str();
  EXPECT_GT(size_of(o.out_prefix + ".svg"), 1000u) << log.str();
  EXPECT_GT(size_of(o.out_prefix + ".png"), 1000u) << log.str();
  EXPECT_NE(read_whole_file(o.out_prefix + ".svg").find("<svg"), std::string::npos);
  EXPECT_EQ(read_whole_file(o.out_prefix + ".png").substr(1, 3), "PNG");
  if (script)
    *script = read_whole_file(o.out_prefix + ".gp");
  return log.str();
}

}  // namespace

TEST(PlotCsv, QuotedFieldsWithCommasQuotesAndLineBreaks)
{
  const std::string text =
      "hardware,\"network.nic\",status,reason\r\n"
      "\"DGX A100 80GB, 8 x HDR 200 Gb/s per node\",200 Gb/s,ok,\r\n"
      "\"the \"\"big\"\" one\",\"400 Gb/s\",does-not-fit,\"needs 92 GiB,\nmore than 80\"\n"
      "\n"
      "plain,,ok\n";
  auto t = parse_csv(text, "x.csv");
  ASSERT_EQ(t.columns, (std::vector<std::string>{"hardware", "network.nic", "status", "reason"}));
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.rows[0][0], "DGX A100 80GB, 8 x HDR 200 Gb/s per node");
  EXPECT_EQ(t.rows[0][1], "200 Gb/s");
  EXPECT_EQ(t.rows[0][3], "");
  EXPECT_EQ(t.rows[1][0], "the \"big\" one");
  EXPECT_EQ(t.rows[1][1], "400 Gb/s");
  EXPECT_EQ(t.rows[1][3], "needs 92 GiB,\nmore than 80");
  EXPECT_EQ(t.rows[2], (std::vector<std::string>{"plain", "", "ok", ""}));  // short row padded
  EXPECT_EQ(t.lines, (std::vector<int>{2, 3, 6}));
  // an empty quoted field and a quoted field at the end of the text without a line break
  auto u = parse_csv("a,b\n\"\",\"x\"\"\"", "y.csv");
  ASSERT_EQ(u.rows.size(), 1u);
  EXPECT_EQ(u.rows[0], (std::vector<std::string>{"", "x\""}));
}

TEST(PlotCsv, MalformedFilesAreRefusedWithTheirLine)
{
  try {
    parse_csv("a,b\n1,\"open\n2,3\n", "bad.csv");
    FAIL() << "an unterminated quote was accepted";
  } catch (const dtsim::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.csv:2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not closed"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_csv("a,b\n1,2,3\n", "long.csv"), dtsim::ConfigError);
  EXPECT_THROW(parse_csv("a,b\n1,x\"y\n", "quote.csv"), dtsim::ConfigError);
  EXPECT_THROW(parse_csv("a,b\n\"1\"x,2\n", "after.csv"), dtsim::ConfigError);
  EXPECT_THROW(parse_csv("", "empty.csv"), dtsim::ConfigError);
}

TEST(PlotUnits, XValuesWithUnitsBecomeNumbersInTheUnitAsWritten)
{
  auto q = parse_axis_value("200 Gb/s");
  ASSERT_TRUE(q);
  EXPECT_DOUBLE_EQ(q->si, 25e9);  // bytes/s
  EXPECT_EQ(q->unit, "Gb/s");
  EXPECT_DOUBLE_EQ(parse_axis_value("80 GiB")->si, 80.0 * 1073741824.0);
  EXPECT_DOUBLE_EQ(parse_axis_value("1.5us")->si, 1.5e-6);
  EXPECT_DOUBLE_EQ(parse_axis_value("312 TFLOP/s")->si, 312e12);
  EXPECT_DOUBLE_EQ(parse_axis_value("15 kW")->si, 15e3);
  EXPECT_DOUBLE_EQ(parse_axis_value(" 8 ")->si, 8);
  EXPECT_EQ(parse_axis_value("8")->unit, "");
  EXPECT_FALSE(parse_axis_value("1f1b"));
  EXPECT_FALSE(parse_axis_value("200 furlongs"));
  EXPECT_FALSE(parse_axis_value("dgx-h100"));

  auto a = numeric_axis({"100 Gb/s", "200 Gb/s", "400 Gb/s", "800 Gb/s", "1.6 Tb/s"});
  ASSERT_TRUE(a);
  EXPECT_EQ(a->unit, "Gb/s");
  ASSERT_EQ(a->values.size(), 5u);
  EXPECT_DOUBLE_EQ(a->values[0], 100);
  EXPECT_DOUBLE_EQ(a->values[3], 800);
  EXPECT_DOUBLE_EQ(a->values[4], 1600);
  auto b = numeric_axis({"1", "2", "4", "8"});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->unit, "");
  EXPECT_EQ(b->values, (std::vector<double>{1, 2, 4, 8}));
  EXPECT_FALSE(numeric_axis({"100 Gb/s", "80 GiB"}));  // two dimensions
  EXPECT_FALSE(numeric_axis({"100 Gb/s", "200"}));     // a bare number among quantities
  EXPECT_FALSE(numeric_axis({"1f1b", "interleaved"}));
}

TEST_F(PlotChart, ScalingChart)
{
  std::string script;
  std::string log = render("scaling.csv", "auto", "scaling", &script);
  EXPECT_NE(log.find("kind scaling"), std::string::npos) << log;
  // the row that does not fit is skipped with a note
  EXPECT_NE(log.find("skipping"), std::string::npos) << log;
  EXPECT_NE(log.find("does-not-fit"), std::string::npos) << log;
  EXPECT_NE(script.find("set logscale x 2"), std::string::npos);
  EXPECT_NE(script.find("parallel efficiency (%)"), std::string::npos);
  EXPECT_NE(script.find("ideal linear scaling"), std::string::npos);
  EXPECT_NE(script.find("DGX H100, 8 x NDR 400 Gb/s per node"), std::string::npos);  // a series per hardware
}

TEST_F(PlotChart, WhatIfChart)
{
  std::string script;
  std::string log = render("whatif-nic.csv", "auto", "whatif", &script);
  EXPECT_NE(log.find("kind whatif"), std::string::npos) << log;
  EXPECT_NE(script.find("network.nic (Gb/s"), std::string::npos);
  EXPECT_NE(script.find("exposed DP comm changes most"), std::string::npos);
}

TEST_F(PlotChart, BreakdownChart)
{
  std::string script;
  std::string log = render("breakdown-tp.csv", "breakdown", "breakdown", &script);
  EXPECT_NE(log.find("status error"), std::string::npos) << log;  // the tp=16 row
  for (const char* name : {"compute", "exposed TP comm", "exposed DP comm", "bubble", "optimizer"})
    EXPECT_NE(script.find(std::string("\"") + name + "\""), std::string::npos) << name;
  EXPECT_EQ(script.find("exposed PP comm"), std::string::npos);  // zero everywhere: left out
  // auto picks the what-if chart for one numeric input
  render("breakdown-tp.csv", "auto", "breakdown-auto");
}

// Grouped bars (hand-made sample, realistic numbers): one group per model, one bar per hardware, tokens/s spanning
// 473k / 7.37k = 64x, so a log axis, and values written as "473k".
TEST_F(PlotChart, BarsChart)
{
  std::string script;
  std::string log = render("bars.csv", "bars", "bars", &script);
  EXPECT_NE(log.find("status does-not-fit"), std::string::npos) << log;
  EXPECT_NE(script.find("throughput (tokens/s), log scale"), std::string::npos);
  EXPECT_NE(script.find("title \"Cerebras CS-2 (WSE-2) with MemoryX\""), std::string::npos);
  EXPECT_NE(script.find("\"small-1b\" 0, \"large-20b\" 1"), std::string::npos) << script;  // models in CSV order
  EXPECT_NE(script.find("sprintf('%.3gk', $2 / 1e3)"), std::string::npos);
  EXPECT_NE(script.find("\"500k\""), std::string::npos);  // log tics as 500k, not 500000
}

// Bars of a sweep of one scenario (hand-made sample, --vary parallel.pp=1,2,4 --vary training.precision=bf16,fp8): the
// model and the hardware are the same in every row, so the bars follow what the sweep varies: pp along x (the
// outermost --vary), one bar per precision, every row drawn.
TEST_F(PlotChart, BarsFollowTheVariedInputs)
{
  std::string script;
  std::string log = render("bars-varied.csv", "bars", "bars-varied", &script);
  EXPECT_EQ(log.find("only the first is drawn"), std::string::npos) << log;
  EXPECT_NE(script.find("set xlabel \"parallel.pp\""), std::string::npos) << script;
  EXPECT_NE(script.find("\"1\" 0, \"2\" 1, \"4\" 2"), std::string::npos) << script;
  EXPECT_NE(script.find("title \"bf16\""), std::string::npos) << script;
  EXPECT_NE(script.find("title \"fp8\""), std::string::npos) << script;
  EXPECT_EQ(script.find("title \"DGX A100"), std::string::npos) << script;  // the hardware does not vary
  // Each series holds its three bars: the datablock of the first lists pp 1, 2 and 4 (categories 0, 1, 2).
  const size_t g0 = script.find("$g0 << EOD"), g1 = script.find("$g1 << EOD");
  ASSERT_NE(g0, std::string::npos) << script;
  ASSERT_NE(g1, std::string::npos) << script;
  const std::string first = script.substr(g0, g1 - g0);
  EXPECT_NE(first.find("1210000"), std::string::npos) << first;
  EXPECT_NE(first.find("1050000"), std::string::npos) << first;
  EXPECT_NE(first.find("880000"), std::string::npos) << first;
}

// Weak scaling (hand-made sample): the global batch moves with the devices, so it is part of the x axis and makes
// one series, not one series per point.
TEST_F(PlotChart, InputMovingWithXIsNoSeries)
{
  std::string script;
  render("weak.csv", "auto", "weak", &script);
  EXPECT_NE(script.find("title \"simulated\""), std::string::npos) << script;
  EXPECT_EQ(script.find("global_batch="), std::string::npos) << script;
}

TEST_F(PlotChart, MemoryChart)
{
  std::string script;
  render("breakdown-tp.csv", "memory", "memory", &script);
  EXPECT_NE(script.find("memory per device (GiB)"), std::string::npos);
  EXPECT_NE(script.find("capacity per device (80 GiB)"), std::string::npos);
  render("scaling.csv", "memory", "memory-scaling");
}

TEST(Plot, UnknownColumnNamesTheFileTheColumnAndTheColumnsAvailable)
{
  PlotOptions o;
  o.csv = data("whatif-nic.csv");
  o.x = "network.nicc";
  o.out_prefix = (out_dir("unknown") / "unknown").string();
  std::ostringstream log;
  try {
    plot(o, log);
    FAIL() << "an unknown column was accepted";
  } catch (const dtsim::ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("whatif-nic.csv"), std::string::npos) << m;
    EXPECT_NE(m.find("--x: unknown column 'network.nicc'"), std::string::npos) << m;
    EXPECT_NE(m.find("did you mean 'network.nic'"), std::string::npos) << m;
    EXPECT_NE(m.find("the columns are: "), std::string::npos) << m;
    EXPECT_NE(m.find("step_time_s"), std::string::npos) << m;
  }
  EXPECT_FALSE(fs::exists(o.out_prefix + ".gp"));
}

TEST(Plot, BadInputIsRefused)
{
  PlotOptions o;
  o.csv = data("no-such-file.csv");
  std::ostringstream log;
  try {
    plot(o, log);
    FAIL() << "a missing file was accepted";
  } catch (const dtsim::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-file.csv"), std::string::npos) << e.what();
  }
  o.csv = data("scaling.csv");
  o.kind = "pie";
  EXPECT_THROW(plot(o, log), dtsim::ConfigError);
}

TEST(Plot, GnuplotFailureIsReported)
{
  PlotOptions o;
  o.csv = data("breakdown-tp.csv");
  o.kind = "breakdown";
  o.out_prefix = (out_dir("nognuplot") / "b").string();
  setenv("DTSIM_GNUPLOT", "/nonexistent/gnuplot", 1);
  std::ostringstream log;
  int rc = plot(o, log);
  unsetenv("DTSIM_GNUPLOT");
  EXPECT_EQ(rc, 1);
  EXPECT_NE(log.str().find("gnuplot failed"), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("cannot run /nonexistent/gnuplot"), std::string::npos) << log.str();
}

// A run that never finishes has no time to train (an empty cell in a simulated row): days against the device MTBF
// skip it with its reason instead of refusing the whole file (time-to-train.csv: dtsim sweep
// scenarios/examples/llama3-405b-15t-tokens.yaml --vary "resilience.device_mtbf=1 h,10000 h,86300 h"; at 1 h per
// GPU the expected time to train passes 10^308 s).
TEST(Plot, RowWithoutTimeToTrainIsSkippedWithWhyNot)
{
  PlotOptions o;
  o.csv = data("time-to-train.csv");
  o.y = "time_to_train_s";
  o.out_prefix = (out_dir("days") / "days").string();
  setenv("DTSIM_GNUPLOT", "/nonexistent/gnuplot", 1);  // the script is what is checked
  std::ostringstream log;
  int rc = plot(o, log);
  unsetenv("DTSIM_GNUPLOT");
  EXPECT_EQ(rc, 1) << log.str();  // gnuplot could not run; the data were accepted
  EXPECT_NE(log.str().find("time-to-train.csv:2: no time_to_train_s (the run never finishes: the job fails every"),
            std::string::npos)
      << log.str();
  EXPECT_NE(log.str().find("kind whatif"), std::string::npos) << log.str();
  const std::string script = read_whole_file(o.out_prefix + ".gp");
  EXPECT_NE(script.find("time to train (days)"), std::string::npos) << script;
  EXPECT_NE(script.find("\n10000 104.7"), std::string::npos) << script;  // days at 10,000 h
  EXPECT_EQ(script.find("\n1 "), std::string::npos) << script;          // the point that never finishes is not drawn
}

// Several result files on one chart: rows appended, columns matched by name, cells of a column a file lacks empty.
TEST(PlotCsv, AppendRowsMatchesColumnsByName)
{
  auto a = dtsim::app::parse_csv("devices,tokens_per_s,scenario\n64,100,gpu\n128,190,gpu\n", "a.csv");
  auto b = dtsim::app::parse_csv("scenario,tokens_per_s,wafer.mode\ncs2,20,weight-streaming\n", "b.csv");
  dtsim::app::append_rows(a, b);
  ASSERT_EQ(a.columns, (std::vector<std::string>{"devices", "tokens_per_s", "scenario", "wafer.mode"}));
  ASSERT_EQ(a.rows.size(), 3u);
  EXPECT_EQ(a.rows[0], (std::vector<std::string>{"64", "100", "gpu", ""}));
  EXPECT_EQ(a.rows[2], (std::vector<std::string>{"", "20", "cs2", "weight-streaming"}));
  EXPECT_EQ(a.lines.size(), 3u);
}
