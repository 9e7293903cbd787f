// dtsim_golden: the golden records of every shipped scenario, every benchmark case and every shipped stack and
// hardware file as resolved (docs/testing.md).
//
// A golden record is a JSON file under tests/golden/ holding the dtsim command that makes a record, the exit code it
// gave and the record it printed (run, search) or wrote (sweep: its JSONL, one record per point):
//   {"command": ["run", "scenarios/tiny.yaml", "--format", "json"], "exit_code": 0, "record": {...}}
// `check` runs the command again and compares: the exit code and every string, boolean and key exactly, every number
// to a relative tolerance (1e-9: a step's time is a sum of thousands of kernel and flow times, and a change of the
// order of two additions moves its last digits; a change of the physics moves far more). `write` makes every record
// anew and says which ones moved and where; `complete` checks that every scenario and every case has its record and
// that no record is left without one. Run from the repository root.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/bench.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

const std::string kGoldenDir = "tests/golden";
const std::string kOutPlaceholder = "{out}";
constexpr double kDefaultRelTol = 1e-9;
constexpr int kMaxReportedDifferences = 20;

struct Case {
  std::string golden;                // tests/golden/....json
  std::vector<std::string> command;  // dtsim's arguments
};

// The YAML files directly in `dir`, sorted.
std::vector<fs::path> yaml_files_in(const fs::path& dir)
{
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".yaml")
      files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

// Every scenario under scenarios/ runs as `dtsim run SCENARIO --format json`; every bench case as its record command;
// every stack file under hardware/stacks/ as `dtsim stack STACK --format json` and every hardware file under
// hardware/ as `dtsim hardware FILE --format json`.
std::vector<Case> all_cases()
{
  std::vector<Case> cases;
  std::vector<fs::path> scenarios;
  for (const auto& e : fs::recursive_directory_iterator("scenarios"))
    if (e.is_regular_file() && e.path().extension() == ".yaml")
      scenarios.push_back(e.path());
  std::sort(scenarios.begin(), scenarios.end());
  for (const auto& p : scenarios) {
    fs::path golden = fs::path(kGoldenDir) / p;
    golden.replace_extension(".json");
    cases.push_back({golden.string(), {"run", p.string(), "--format", "json"}});
  }
  for (const auto& c : dtsim::app::bench_cases())
    cases.push_back({kGoldenDir + "/bench/" + c.name + ".json", dtsim::app::bench_record_command(c)});
  // Every shipped stack and hardware file as the loader resolves it: a key dropped from one moves its record (a
  // merge once dropped two keys from a stack that way, and only a validation error moved).
  for (const auto& p : yaml_files_in("hardware/stacks"))
    cases.push_back({kGoldenDir + "/stacks/" + p.stem().string() + ".json", {"stack", p.string(), "--format", "json"}});
  for (const auto& p : yaml_files_in("hardware"))
    cases.push_back(
        {kGoldenDir + "/hardware/" + p.stem().string() + ".json", {"hardware", p.string(), "--format", "json"}});
  return cases;
}

struct Output {
  int exit_code = -1;
  json record;
};

std::string read_file(const std::string& path)
{
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// One JSON document, or (a sweep's JSONL) an array of the documents of its lines.
json parse_record(const std::string& text, const std::string& where)
{
  try {
    return json::parse(text);
  } catch (const json::parse_error&) {
  }
  json lines = json::array();
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty())
      lines.push_back(json::parse(line));  // throws, naming the bad line's place, when it is not JSON either
  if (lines.empty())
    throw std::runtime_error(where + ": no record (empty output)");
  return lines;
}

// Runs dtsim with `command` ({out} replaced by a fresh temporary prefix), its stdout to a file; the record is what it
// printed, or the sweep's {out}.jsonl.
Output run_dtsim(const std::string& dtsim, std::vector<std::string> command)
{
  char dir[] = "/tmp/dtsim-golden-XXXXXX";
  if (!mkdtemp(dir))
    throw std::runtime_error("cannot create a temporary directory");
  const std::string prefix = std::string(dir) + "/out";
  bool writes_files = false;
  for (auto& a : command)
    if (a == kOutPlaceholder) {
      a = prefix;
      writes_files = true;
    }
  const std::string stdout_path = std::string(dir) + "/stdout";
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(dtsim.c_str()));
  for (auto& a : command)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::cout.flush();
  const pid_t pid = fork();
  if (pid < 0)
    throw std::runtime_error("fork failed");
  if (pid == 0) {
    FILE* f = std::freopen(stdout_path.c_str(), "w", stdout);
    if (!f)
      _exit(127);
    execv(dtsim.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  Output out;
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  const std::string record_path = writes_files ? prefix + ".jsonl" : stdout_path;
  const std::string text = read_file(record_path);
  fs::remove_all(dir);
  if (out.exit_code == 127)
    throw std::runtime_error("cannot run " + dtsim);
  out.record = parse_record(text, record_path);
  return out;
}

std::string shown(const json& v)
{
  std::string s = v.dump();
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

// Appends "PATH: expected E, got G" for every difference of `got` from `expected`.
void compare(const json& expected, const json& got, const std::string& path, double rel_tol,
             std::vector<std::string>& diffs)
{
  if (expected.is_number() && got.is_number()) {
    const double e = expected.get<double>(), g = got.get<double>();
    const double scale = std::max(std::fabs(e), std::fabs(g));
    if (std::fabs(e - g) > rel_tol * scale) {
      char rel[64];
      std::snprintf(rel, sizeof rel, " (relative difference %.3g)", scale > 0 ? std::fabs(e - g) / scale : 0.0);
      diffs.push_back(path + ": expected " + shown(expected) + ", got " + shown(got) + rel);
    }
    return;
  }
  if (expected.type() != got.type()) {
    diffs.push_back(path + ": expected " + shown(expected) + ", got " + shown(got));
    return;
  }
  if (expected.is_object()) {
    for (const auto& [k, v] : expected.items()) {
      if (!got.contains(k))
        diffs.push_back(path + "." + k + ": missing (expected " + shown(v) + ")");
      else
        compare(v, got.at(k), path + "." + k, rel_tol, diffs);
    }
    for (const auto& [k, v] : got.items())
      if (!expected.contains(k))
        diffs.push_back(path + "." + k + ": not expected (got " + shown(v) + ")");
    return;
  }
  if (expected.is_array()) {
    if (expected.size() != got.size())
      diffs.push_back(path + ": expected " + std::to_string(expected.size()) + " elements, got " +
                      std::to_string(got.size()));
    for (size_t i = 0; i < std::min(expected.size(), got.size()); ++i)
      compare(expected[i], got[i], path + "[" + std::to_string(i) + "]", rel_tol, diffs);
    return;
  }
  if (expected != got)
    diffs.push_back(path + ": expected " + shown(expected) + ", got " + shown(got));
}

std::vector<std::string> differences(const json& golden, const Output& out, double rel_tol)
{
  std::vector<std::string> diffs;
  if (golden.at("exit_code").get<int>() != out.exit_code)
    diffs.push_back("exit code: expected " + golden.at("exit_code").dump() + ", got " +
                    std::to_string(out.exit_code));
  compare(golden.at("record"), out.record, "record", rel_tol, diffs);
  return diffs;
}

std::string joined(const std::vector<std::string>& command)
{
  std::string s = "dtsim";
  for (const auto& a : command)
    s += " " + (a.find(' ') == std::string::npos ? a : "'" + a + "'");
  return s;
}

int check(const std::string& dtsim, const std::string& golden_path, double rel_tol)
{
  const json golden = json::parse(read_file(golden_path));
  const auto command = golden.at("command").get<std::vector<std::string>>();
  const Output out = run_dtsim(dtsim, command);
  const auto diffs = differences(golden, out, rel_tol);
  if (diffs.empty()) {
    std::cout << golden_path << ": same record (" << joined(command) << ")\n";
    return 0;
  }
  std::cout << golden_path << ": " << diffs.size() << " difference(s) from the golden record of "
            << joined(command) << " (numbers to a relative " << rel_tol << "):\n";
  for (size_t i = 0; i < diffs.size() && i < size_t(kMaxReportedDifferences); ++i)
    std::cout << "  " << diffs[i] << "\n";
  if (diffs.size() > size_t(kMaxReportedDifferences))
    std::cout << "  ... and " << diffs.size() - kMaxReportedDifferences << " more\n";
  std::cout << "If the change is meant, run `bash scripts/golden.sh` and say in the commit which records moved and "
               "why.\n";
  return 1;
}

// Writes every record anew (those whose golden file contains `only`, when given); prints which moved.
int write(const std::string& dtsim, const std::string& only)
{
  int moved = 0, added = 0, same = 0;
  for (const auto& c : all_cases()) {
    if (!only.empty() && c.golden.find(only) == std::string::npos)
      continue;
    const Output out = run_dtsim(dtsim, c.command);
    json golden;
    golden["command"] = c.command;
    golden["exit_code"] = out.exit_code;
    golden["record"] = out.record;
    if (fs::exists(c.golden)) {
      const json old = json::parse(read_file(c.golden));
      const auto diffs = differences(old, out, 0.0);
      if (diffs.empty() && old.at("command") == golden.at("command")) {
        ++same;
        continue;
      }
      ++moved;
      std::cout << c.golden << ": moved, " << diffs.size() << " value(s):\n";
      for (size_t i = 0; i < diffs.size() && i < 5; ++i)
        std::cout << "  " << diffs[i] << "\n";
    } else {
      ++added;
      std::cout << c.golden << ": new\n";
    }
    fs::create_directories(fs::path(c.golden).parent_path());
    std::ofstream(c.golden) << golden.dump(1) << "\n";
  }
  std::cout << same << " unchanged, " << moved << " moved, " << added << " new\n";
  return 0;
}

// Every case has its golden record and every golden record its case.
int complete()
{
  std::map<std::string, std::vector<std::string>> expected;
  for (const auto& c : all_cases())
    expected[c.golden] = c.command;
  int problems = 0;
  for (const auto& [golden, command] : expected) {
    if (!fs::exists(golden)) {
      std::cout << golden << ": missing: no golden record of " << joined(command) << "\n";
      ++problems;
    } else if (json::parse(read_file(golden)).at("command").get<std::vector<std::string>>() != command) {
      std::cout << golden << ": its command is not " << joined(command) << "\n";
      ++problems;
    }
  }
  for (const auto& e : fs::recursive_directory_iterator(kGoldenDir))
    if (e.is_regular_file() && e.path().extension() == ".json" && !expected.count(e.path().string())) {
      std::cout << e.path().string() << ": stale: no scenario, bench case, stack or hardware file makes it\n";
      ++problems;
    }
  if (problems)
    std::cout << "run `bash scripts/golden.sh` to write the missing records and remove the stale ones by hand\n";
  else
    std::cout << expected.size() << " golden records, one for every scenario, bench case, stack and hardware file\n";
  return problems ? 1 : 0;
}

int usage()
{
  std::cerr << "usage: dtsim_golden check GOLDEN.json --dtsim PATH [--rel-tol X]\n"
               "       dtsim_golden write --dtsim PATH [--only SUBSTRING]\n"
               "       dtsim_golden complete\n"
               "(from the repository root)\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv)
{
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty())
    return usage();
  std::string dtsim, only, golden;
  double rel_tol = kDefaultRelTol;
  for (size_t i = 1; i < args.size(); ++i) {
    const bool has_value = i + 1 < args.size();
    if (args[i] == "--dtsim" && has_value)
      dtsim = fs::absolute(args[++i]).string();
    else if (args[i] == "--only" && has_value)
      only = args[++i];
    else if (args[i] == "--rel-tol" && has_value)
      rel_tol = std::stod(args[++i]);
    else if (golden.empty() && args[i].rfind("--", 0) != 0)
      golden = args[i];
    else
      return usage();
  }
  try {
    if (args[0] == "check" && !dtsim.empty() && !golden.empty())
      return check(dtsim, golden, rel_tol);
    if (args[0] == "write" && !dtsim.empty())
      return write(dtsim, only);
    if (args[0] == "complete")
      return complete();
  } catch (const std::exception& e) {
    std::cerr << "dtsim_golden: " << e.what() << "\n";
    return 1;
  }
  return usage();
}
