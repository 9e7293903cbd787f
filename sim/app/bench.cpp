#include "app/bench.hpp"

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <ostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/load.hpp"
#include "config/yaml_file.hpp"
#include "core/child_process.hpp"
#include "app/search.hpp"
#include "app/simulate.hpp"
#include "app/sweep.hpp"
#include "core/diagnostics.hpp"
#include "core/version.hpp"
#include "scenario/scenario_spec.hpp"

namespace dtsim::app {

namespace {

using json = nlohmann::ordered_json;

using Case = BenchCase;
using Kind = BenchCase::Kind;

}  // namespace

// The cases of issue 6: the GPT-3 175B and Megatron 1T steps (1F1B and interleaved), a wafer step, a 1,000-point
// sweep and the 1,024-GPU GPT-3 plan search; `tiny` is for the test of this command.
std::vector<BenchCase> bench_cases()
{
  // Interleaving: 2 model chunks per stage (GPT-3: 96 layers / 16 stages = 6 per stage; 1T: 128 / 64 = 2).
  const std::vector<std::string> interleaved = {"schedule=interleaved-1f1b", "parallel.vpp=2"};
  return {
      {"gpt3-175b-1024-1f1b", "GPT-3 175B, 1,024 A100, tp 8 pp 16 dp 8, 1F1B, 192 microbatches", Kind::Run,
       "scenarios/default.yaml", {}},
      {"gpt3-175b-1024-interleaved", "GPT-3 175B, 1,024 A100, tp 8 pp 16 dp 8, interleaved (vpp 2)", Kind::Run,
       "scenarios/default.yaml", interleaved},
      {"megatron-1t-3072-1f1b", "Megatron 1T, 3,072 A100, tp 8 pp 64 dp 6, 1F1B, global batch 3072, mb 1",
       Kind::Run, "scenarios/validation/megatron-2021-1t.yaml", {}},
      {"megatron-1t-3072-interleaved", "Megatron 1T, 3,072 A100, tp 8 pp 64 dp 6, interleaved (vpp 2), gb 3072, mb 1",
       Kind::Run, "scenarios/validation/megatron-2021-1t.yaml", interleaved},
      {"wafer-gpt3-175b-16cs2", "GPT-3 175B on 16 CS-2, weight streaming", Kind::Run,
       "scenarios/compare/gpt3-175b-cs2.yaml", {}},
      {"sweep-1000",
       "1,000-point sweep of GPT-3 XL (10 device counts x 10 sequence lengths x 10 bucket sizes), --jobs processes",
       Kind::Sweep,
       "scenarios/bench/sweep-gpt3-xl.yaml",
       {"devices=16..160+16", "training.seq_len=200..2000+200", "parallel.dp_bucket=5..50+5 MiB"}},
      {"search-gpt3-175b-1024", "plan search, GPT-3 175B on 1,024 A100, --jobs processes", Kind::Search,
       "scenarios/default.yaml", {}},
      // Frontier plan searches (issue 35, item 3): Llama 3 405B as Meta trained it on 16,384 H100 (Llama Team 2024,
      // Table 4) and the same model, batch scaled with dp, on 131,072; DeepSeek-V3 on 2,048 H800 (ep, vpp, the
      // zero-bubble schedules, ZB-V and DualPipe in its space; docs/performance.md).
      {"search-llama3-405b-16384", "plan search, Llama 3 405B on 16,384 H100, --jobs processes", Kind::Search,
       "scenarios/examples/llama3-405b-15t-tokens.yaml", {}},
      {"search-llama3-405b-131072", "plan search, Llama 3 405B on 131,072 H100, global batch 16,384, --jobs processes",
       Kind::Search, "scenarios/examples/llama3-405b-15t-tokens.yaml",
       {"devices=131072", "parallel.dp=1024", "training.global_batch=16384"}},
      {"search-deepseek-v3-2048", "plan search, DeepSeek-V3 on 2,048 H800, --jobs processes", Kind::Search,
       "scenarios/examples/deepseek-v3-h800x2048.yaml", {}},
      // A mixture of experts whose expert groups cross NVLink racks (issue 35): Qwen3-235B-A22B on 512 GB200 NVL72
      // GPUs, ep 64 (one stage's group split 32 + 32 over two racks) and ep 128 (72 + 56, and 32 + 72 + 24).
      {"qwen3-235b-512-gb200-ep64", "Qwen3-235B-A22B, 512 GB200 NVL72, tp 2 pp 2 ep 64, 1F1B, groups across racks",
       Kind::Run, "scenarios/bench/qwen3-235b-gb200-512.yaml", {}},
      {"qwen3-235b-512-gb200-ep128", "Qwen3-235B-A22B, 512 GB200 NVL72, tp 2 pp 2 ep 128, groups over 2-3 racks",
       Kind::Run, "scenarios/bench/qwen3-235b-gb200-512.yaml", {"parallel.ep=128"}},
      {"tiny", "tiny GPT on 16 A100 (for tests)", Kind::Run, "scenarios/tiny.yaml", {}},
  };
}

std::vector<std::string> bench_record_command(const BenchCase& c)
{
  const char* flag = c.kind == Kind::Sweep ? "--vary" : "--set";
  std::vector<std::string> args = {c.kind == Kind::Run ? "run" : c.kind == Kind::Sweep ? "sweep" : "search",
                                   c.scenario};
  for (const auto& s : c.sets) {
    const auto unset = config::unset_key(s);
    args.push_back(unset ? "--unset" : flag);
    args.push_back(unset.value_or(s));
  }
  if (c.kind == Kind::Sweep)
    for (const char* a : {"--out", "{out}", "--quiet"})
      args.push_back(a);
  else
    for (const char* a : {"--format", "json"})
      args.push_back(a);
  if (c.kind == Kind::Search)
    args.push_back("--quiet");
  return args;
}

namespace {

std::string join_path(const std::string& root, const std::string& rel)
{
  return (std::filesystem::path(root) / rel).string();
}

// The repository root that holds the cases' scenarios: --root if given, else the current directory, else the one
// above the program's own folder (build/dtsim), else the source tree it was built from. Throws ConfigError naming
// every place looked at when none holds them.
std::string find_root(const std::string& given)
{
  namespace fs = std::filesystem;
  const std::string probe = "scenarios/default.yaml";
  std::error_code ec;
  std::vector<std::string> places;
  if (!given.empty()) {
    places.push_back(given);
  } else {
    places.push_back(".");
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec)
      places.push_back(exe.parent_path().parent_path().string());
#ifdef DTSIM_SOURCE_DIR
    places.push_back(DTSIM_SOURCE_DIR);
#endif
  }
  for (const auto& p : places)
    if (fs::is_regular_file(fs::path(p) / probe, ec))
      return p;
  std::string looked;
  for (const auto& p : places)
    looked += (looked.empty() ? "" : ", ") + p;
  throw ConfigError({{{"<command line>", 0, 0}, "--root",
                      "cannot find the benchmark scenarios (" + probe + ") in " + looked +
                          "; give --root DIR, the repository root"}});
}

// What a case returns from its child: activities, simulated step time (0 for sweeps and searches), simulations.
std::vector<double> run_case(const Case& c, const BenchOptions& o)
{
  const std::string path = c.scenario.rfind('/', 0) == 0 ? c.scenario : join_path(o.root, c.scenario);
  if (c.kind == Kind::Run) {
    auto spec = load_for_simulation(path, c.sets);
    auto r = simulate(spec, false);
    if (!r.simulated)  // nothing was simulated: timing it would say nothing
      throw std::runtime_error("bench: " + c.name + ": the plan does not fit in memory: " + r.why_not_fitting);
    return {double(r.replay.activities), r.replay.step_time_s, 1.0};
  }
  if (c.kind == Kind::Search) {
    SearchOptions so;
    so.scenario = path;
    so.sets = c.sets;
    so.format = "json";
    so.jobs = o.jobs;
    std::ostringstream out, log;
    app::search(out, log, so);
    auto j = json::parse(out.str());
    return {double(j.at("plans").at("activities").get<int64_t>()), 0.0,
            double(j.at("plans").at("simulated").get<int64_t>())};
  }
  // Sweep: into a fresh temporary directory (a resumed sweep would skip its points), removed afterwards.
  char tmpl[] = "/tmp/dtsim-bench-XXXXXX";
  if (!mkdtemp(tmpl))
    throw std::runtime_error("cannot create a temporary directory for the sweep");
  SweepOptions wo;
  wo.scenario = path;
  wo.vary = c.sets;
  wo.out_prefix = std::string(tmpl) + "/sweep";
  wo.jobs = o.jobs;
  wo.quiet = true;
  double activities = 0, points = 0;
  try {
    std::ostringstream log;
    app::sweep(wo, log);
    std::ifstream in(wo.out_prefix + ".jsonl");
    for (std::string line; std::getline(in, line);) {
      auto j = json::parse(line);
      if (j.value("status", "") == "ok") {
        activities += double(j.at("simulation").at("activities").get<int64_t>());
        ++points;
      }
    }
  } catch (...) {
    std::filesystem::remove_all(tmpl);
    throw;
  }
  std::filesystem::remove_all(tmpl);
  return {activities, 0.0, points};
}

struct Sample {
  double wall_s = 0;
  ChildUsage usage;
};

struct Result {
  const Case* c = nullptr;
  std::vector<Sample> samples;
  double activities = 0, step_s = 0, simulations = 0;
  bool ok = true;
};

double median(std::vector<double> v)
{
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Summary {
  double wall_best_s = 0, wall_median_s = 0, user_median_s = 0;
  int64_t peak_rss_bytes = 0;  // the largest of the runs
};

Summary summarize(const Result& r)
{
  std::vector<double> walls, users;
  Summary s;
  for (const auto& x : r.samples) {
    walls.push_back(x.wall_s);
    users.push_back(x.usage.user_cpu_s);
    s.peak_rss_bytes = std::max(s.peak_rss_bytes, x.usage.peak_rss_bytes);
  }
  s.wall_best_s = walls.empty() ? 0.0 : *std::min_element(walls.begin(), walls.end());
  s.wall_median_s = median(walls);
  s.user_median_s = median(users);
  return s;
}

const char* kind_name(Kind k) { return k == Kind::Run ? "run" : k == Kind::Sweep ? "sweep" : "search"; }

void print_table(std::ostream& out, const std::vector<Result>& results, double load)
{
  char line[512];
  std::snprintf(line, sizeof line, "%-30s %4s %9s %9s %9s %9s %12s %12s %7s\n", "case", "runs", "wall best",
                "wall med", "user CPU", "peak RSS", "activities", "activities/s", "sims");
  out << line;
  for (const auto& r : results) {
    if (!r.ok) {
      out << r.c->name << ": FAILED\n";
      continue;
    }
    const Summary m = summarize(r);
    std::snprintf(line, sizeof line, "%-30s %4zu %8.3fs %8.3fs %8.3fs %6.0fMiB %12.0f %12.3g %7.0f\n",
                  r.c->name.c_str(), r.samples.size(), m.wall_best_s, m.wall_median_s, m.user_median_s,
                  double(m.peak_rss_bytes) / 1048576.0, r.activities, r.activities / m.wall_best_s, r.simulations);
    out << line;
  }
  std::snprintf(line, sizeof line, "load average before the runs: %.2f\n", load);
  out << line;
}

void print_json(std::ostream& out, const std::vector<Result>& results, double load)
{
  json j;
  j["dtsim_version"] = kVersion;
  j["load_average_1min_before"] = load;
  j["cases"] = json::array();
  for (const auto& r : results) {
    json c;
    c["case"] = r.c->name;
    c["what"] = r.c->what;
    c["kind"] = kind_name(r.c->kind);
    c["ok"] = r.ok;
    if (r.ok) {
      json runs = json::array();
      for (const auto& x : r.samples)
        runs.push_back({{"wall_s", x.wall_s}, {"user_cpu_s", x.usage.user_cpu_s},
                        {"system_cpu_s", x.usage.system_cpu_s}, {"peak_rss_bytes", x.usage.peak_rss_bytes}});
      const Summary m = summarize(r);
      c["wall_best_s"] = m.wall_best_s;
      c["wall_median_s"] = m.wall_median_s;
      c["user_cpu_median_s"] = m.user_median_s;
      c["peak_rss_bytes"] = m.peak_rss_bytes;
      c["activities"] = int64_t(r.activities);
      c["activities_per_s"] = r.activities / m.wall_best_s;
      c["simulations"] = int64_t(r.simulations);
      c["step_time_s"] = r.step_s;
      c["runs"] = runs;
    }
    j["cases"].push_back(c);
  }
  out << j.dump(2) << "\n";
}

}  // namespace

int bench(std::ostream& out, std::ostream& log, const BenchOptions& o)
{
  auto all = bench_cases();
  if (o.list) {
    for (const auto& c : all)
      out << c.name << "  " << c.what << "\n";
    return 0;
  }
  std::vector<Case> chosen;
  if (!o.scenario.empty())
    chosen.push_back({"custom", o.scenario, Kind::Run, std::filesystem::absolute(o.scenario).string(), o.sets});
  for (const auto& name : o.cases) {
    if (name == "custom") {  // the case of --scenario, added above
      if (o.scenario.empty()) {
        Diagnostics diag;  // (a ConfigError built from a braced list trips GCC 12's -Wmaybe-uninitialized)
        diag.add({"<command line>", 0, 0}, "--case",
                 "'custom' runs the scenario given with --scenario FILE, and none was given");
        diag.throw_if_any();
      }
      continue;
    }
    auto it = std::find_if(all.begin(), all.end(), [&](const Case& c) { return c.name == name; });
    if (it == all.end()) {
      std::string known;
      for (const auto& c : all)
        known += (known.empty() ? "" : ", ") + c.name;
      throw ConfigError(
          {{{"<command line>", 0, 0}, "--case", "'" + name + "' is not a benchmark case; the cases are: " + known}});
    }
    chosen.push_back(*it);
  }
  if (chosen.empty())
    for (const auto& c : all)
      if (c.name != "tiny")
        chosen.push_back(c);
  // Only the built-in cases need the repository's scenarios.
  BenchOptions found = o;
  if (std::any_of(chosen.begin(), chosen.end(), [](const Case& c) { return c.name != "custom"; }))
    found.root = find_root(o.root);

  double load[1] = {0};
  getloadavg(load, 1);
  std::vector<Result> results;
  int code = 0;
  for (const auto& c : chosen) {
    Result r;
    r.c = &c;
    for (int i = 0; i < std::max(1, o.repeat) && r.ok; ++i) {
      Sample s;
      const auto t0 = std::chrono::steady_clock::now();
      auto got = run_in_child([&]() { return run_case(c, found); }, &s.usage);
      s.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (!got || got->size() != 3) {
        r.ok = false;
        code = 1;
        log << "bench: " << c.name << " failed\n";
        break;
      }
      r.activities = (*got)[0];
      r.step_s = (*got)[1];
      r.simulations = (*got)[2];
      r.samples.push_back(s);
      log << "bench: " << c.name << " run " << i + 1 << ": " << s.wall_s << " s wall, " << s.usage.user_cpu_s
          << " s user\n";
    }
    results.push_back(std::move(r));
  }
  if (o.format == "json")
    print_json(out, results, load[0]);
  else
    print_table(out, results, load[0]);
  return code;
}

}  // namespace dtsim::app
