// dtsim report (issue "Studies", section 4): the report's files, their content (version, command, inputs, table
// rows, charts), an HTML without external references, identical files for the same input, and bad input refused
// before anything is written. The charts need gnuplot.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "app/study_report.hpp"
#include "core/diagnostics.hpp"
#include "test_paths.hpp"

namespace {

namespace fs = std::filesystem;
using dtsim::app::ReportOptions;
using dtsim::app::write_report;
using dtsim::test::source_path;

using dtsim::test::read_whole_file;

fs::path fresh_dir(const std::string& name)
{
  fs::path d = fs::temp_directory_path() / ("dtsim-report-test-" + std::to_string(getpid())) / name;
  fs::remove_all(d);
  return d;
}

ReportOptions scaling_report(const fs::path& dir)
{
  ReportOptions o;
  o.csv = source_path("tests/unit/data/plot/scaling.csv");
  o.scenarios = {source_path("scenarios/tiny.yaml")};
  o.out_dir = dir.string();
  o.command = "dtsim report scaling.csv --scenario scenarios/tiny.yaml";
  return o;
}

TEST(Report, MarkdownAndSelfContainedHtml)
{
  if (access("/usr/bin/gnuplot", X_OK) != 0)
    GTEST_SKIP() << "/usr/bin/gnuplot is not installed (Debian: gnuplot-nox)";
  const fs::path dir = fresh_dir("scaling");
  std::ostringstream log;
  ASSERT_EQ(write_report(scaling_report(dir), log), 0) << log.str();
  for (const char* f : {"report.md", "report.html", "results.csv", "chart.png", "chart.svg", "breakdown.png",
                        "memory.png"})
    EXPECT_TRUE(fs::is_regular_file(dir / f) && fs::file_size(dir / f) > 0) << f;
  const std::string md = read_whole_file(dir / "report.md"), html = read_whole_file(dir / "report.html");
  for (const std::string& doc : {md, html}) {
    EXPECT_NE(doc.find("dtsim 0.1.0"), std::string::npos);
    EXPECT_NE(doc.find("dtsim report scaling.csv --scenario scenarios/tiny.yaml"), std::string::npos);
    EXPECT_NE(doc.find("tiny-gpt: 4 layers"), std::string::npos);  // the scenario's model summary
    EXPECT_NE(doc.find("global_batch: 64"), std::string::npos);     // the scenario's own text
  }
  // One table row per CSV row, with the varied values first; a point that does not fit is listed too.
  // A varied hardware file is shown by its hardware's name (issue 14), not its path.
  EXPECT_NE(md.find("| 16 | DGX A100 80GB | ok |"), std::string::npos) << md;
  EXPECT_EQ(md.find("| hardware/dgx-a100-80gb.yaml |"), std::string::npos) << md;
  // The title names every model and hardware of the results.
  EXPECT_NE(md.find("# dtsim report: gpt3-6.7b on DGX A100 80GB and DGX H100\n"), std::string::npos) << md;
  EXPECT_NE(md.find("does-not-fit"), std::string::npos);
  EXPECT_NE(html.find(">does-not-fit</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"l\">ok</td>"), std::string::npos);  // text aligned left, numbers right
  EXPECT_NE(md.find("| devices | hardware | status | step time (s) |"), std::string::npos) << md;
  EXPECT_NE(md.find("![chart](chart.png)"), std::string::npos);
  // The HTML carries its three charts and needs no other file.
  size_t svgs = 0;
  for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1))
    ++svgs;
  EXPECT_EQ(svgs, 3u);
  EXPECT_FALSE(std::regex_search(html, std::regex(R"((src|href)\s*=\s*"(?!#))"))) << "a reference to another file";
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("<?xml"), std::string::npos);
  // The same input gives the same documents.
  ASSERT_EQ(write_report(scaling_report(dir), log), 0);
  EXPECT_EQ(read_whole_file(dir / "report.md"), md);
  EXPECT_EQ(read_whole_file(dir / "report.html"), html);
  fs::remove_all(dir.parent_path());
}

// The Markdown report of one results file of tests/unit/data/plot, written into `dir` without gnuplot (the text is
// what is checked).
std::string markdown_report(const fs::path& dir, const std::string& csv)
{
  ReportOptions o;
  o.csv = source_path("tests/unit/data/plot/" + csv);
  o.out_dir = dir.string();
  o.command = "dtsim report " + csv;
  setenv("DTSIM_GNUPLOT", "/nonexistent/gnuplot", 1);
  std::ostringstream log;
  write_report(o, log);
  unsetenv("DTSIM_GNUPLOT");
  return read_whole_file(dir / "report.md");
}

// A run that never finishes (its failures come faster than it recovers) says "never" in the days column and why in
// the note, not an empty cell (tests/unit/data/plot/time-to-train.csv: device MTBF 1 h, 10000 h, 86300 h).
TEST(Report, DaysToTrainOfARunThatNeverFinishes)
{
  const fs::path dir = fresh_dir("days");
  const std::string md = markdown_report(dir, "time-to-train.csv");
  EXPECT_NE(md.find("| days to train | note |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1 h | ok | 6.866 | 298.3 | 39.6% | 24.9 | never | the run never finishes: the job fails "
                    "every 220 ms on average"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 86300 h | ok | 6.866 | 298.3 | 39.6% | 24.9 | 79.8 |"), std::string::npos) << md;
  fs::remove_all(dir.parent_path());
}

// Results of a sweep over several scenario files, reported without --scenario, name every scenario: the note named
// the first row's alone (qa15: three hardware files, "the results name the scenario 'mixtral-8x7b on 64 MI300X'").
TEST(Report, WithoutScenarioFilesEveryScenarioIsNamed)
{
  const fs::path dir = fresh_dir("two");
  const std::string md = markdown_report(dir, "two-scenarios.csv");
  EXPECT_NE(md.find("the results name the scenarios 'tiny GPT on 16 A100' and 'tiny MoE on 16 A100'."),
            std::string::npos)
      << md;
  fs::remove_all(dir.parent_path());
}

TEST(Report, BadInputIsRefusedBeforeAnythingIsWritten)
{
  const fs::path dir = fresh_dir("bad");
  std::ostringstream log;
  ReportOptions o = scaling_report(dir);
  o.csv = source_path("tests/unit/data/plot/missing.csv");
  EXPECT_THROW(write_report(o, log), dtsim::ConfigError);
  o = scaling_report(dir);
  o.scenarios = {source_path("tests/unit/data/sweep/malformed.yaml")};
  EXPECT_THROW(write_report(o, log), dtsim::ConfigError);
  // A CSV whose rows all failed has nothing to report.
  fs::create_directories(dir.parent_path());
  const fs::path failed = dir.parent_path() / "failed.csv";
  std::ofstream(failed) << "point,vary.parallel.tp,status,reason\n0,3,input-error,tp 3 does not divide\n";
  o = scaling_report(dir);
  o.csv = failed.string();
  try {
    write_report(o, log);
    ADD_FAILURE() << "expected a ConfigError";
  } catch (const dtsim::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no row has status ok: nothing to report"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir));
  fs::remove_all(dir.parent_path());
}

}  // namespace
