// dtsim: how long does one training step of model M take on hardware H under parallel plan P, and why?
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>
#include <iostream>

#include <CLI/CLI.hpp>

#include "app/load.hpp"
#include "app/bench.hpp"
#include "app/calibrate.hpp"
#include "app/compare.hpp"
#include "app/plot.hpp"
#include "app/search.hpp"
#include "app/shared_fabric.hpp"
#include "app/show_inputs.hpp"
#include "app/study_report.hpp"
#include "cli/mpi_launch.hpp"
#include "collectives/algorithm_registry.hpp"
#include "config/suggest.hpp"
#include "config/yaml_file.hpp"
#include "app/sweep.hpp"
#include "app/simulate.hpp"
#include "systems/system_kinds.hpp"
#include "core/diagnostics.hpp"
#include "core/version.hpp"
#include "report/run_formats.hpp"
#include "report/run_record.hpp"
#include "report/table_writer.hpp"
#include "report/trace_writer.hpp"
#include "scenario/scenario_spec.hpp"
#include "scenario/schedule_registry.hpp"

namespace {

// Exit codes: 0 success, 1 internal error, 2 bad input, 3 plan does not fit in memory.
constexpr int kBadInput = 2;
constexpr int kDoesNotFit = 3;

struct RunOptions {
  std::string scenario;
  std::vector<std::string> more;  ///< further jobs (--shared-fabric)
  std::vector<std::string> sets;
  std::vector<std::string> unsets;  ///< --unset KEY
  std::string format = "table";
  std::string trace;
  bool shared_fabric = false;
  std::string placement = "packed";
  int64_t steps = 3;
  bool stagger = false;
};

// Several scenarios are several jobs on one cluster, which --shared-fabric says; the options of that mode only
// with it. Returns why the command line is wrong, or "".
std::string check_jobs(const RunOptions& o, const char* command)
{
  if (!o.more.empty() && !o.shared_fabric)
    return std::string("dtsim ") + command + ": " + std::to_string(1 + o.more.size()) +
           " scenarios given; several jobs on one cluster take --shared-fabric, otherwise give one scenario";
  if (o.shared_fabric && !o.trace.empty())
    return std::string("dtsim ") + command + ": --trace writes one job's timeline; it does not take --shared-fabric";
  return "";
}

dtsim::app::SharedFabricOptions shared_options(const RunOptions& o)
{
  dtsim::app::SharedFabricOptions so;
  so.scenarios.push_back(o.scenario);
  so.scenarios.insert(so.scenarios.end(), o.more.begin(), o.more.end());
  so.sets = o.sets;
  so.placement = o.placement;
  so.min_steps = o.steps;
  so.stagger = o.stagger;
  so.format = o.format;
  so.jobs = int(std::max(1u, std::thread::hardware_concurrency()));
  return so;
}

// A plan that does not fit: its memory breakdown has been printed; the reason goes to stderr, with exit 3. The
// same for run and validate.
int does_not_fit(const dtsim::report::RunReport& report)
{
  std::cerr << "dtsim: the plan does not fit in memory: " << report.why_not_fitting << "\n";
  return kDoesNotFit;
}

// Why `path` cannot be written, or "" when it can: checked before a simulation that may take minutes, without
// creating the file (a plan that does not fit writes no trace).
std::string cannot_write(const std::string& path)
{
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec))
    return "it is a directory";
  if (fs::exists(p, ec))  // opened to append, which leaves it as it is (root passes access() on read-only files)
    return std::ofstream(path, std::ios::app) ? "" : "it cannot be opened for writing";
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  if (!fs::is_directory(dir, ec))
    return "no directory " + dir.string();
  return access(dir.c_str(), W_OK) == 0 ? "" : "permission denied in " + dir.string();
}

int run(const RunOptions& o)
{
  if (const std::string why = check_jobs(o, "run"); !why.empty()) {
    std::cerr << why << "\n";
    return kBadInput;
  }
  if (o.shared_fabric)
    return dtsim::app::run_shared_fabric(std::cout, std::cerr, shared_options(o));
  auto spec = dtsim::app::load_for_simulation(o.scenario, o.sets);
  if (!o.trace.empty()) {
    const std::string why = cannot_write(o.trace);
    if (!why.empty()) {
      std::cerr << "dtsim: --trace " << o.trace << ": cannot write the trace file: " << why << "\n";
      return kBadInput;
    }
  }
  const auto report = dtsim::app::simulate(spec, !o.trace.empty());
  const auto record = dtsim::report::make_record(report);
  dtsim::report::run_format(o.format).write(std::cout, record);
  if (!report.simulated)
    return does_not_fit(report);
  if (!o.trace.empty()) {
    std::ofstream out(o.trace);
    if (!out) {
      std::cerr << "dtsim: cannot write the trace file " << o.trace << "\n";
      return kBadInput;
    }
    dtsim::report::write_trace(out, record);
    out.flush();
    if (!out) {
      std::cerr << "dtsim: --trace " << o.trace << ": writing the trace file failed\n";
      return kBadInput;
    }
  }
  return 0;
}

int validate(const RunOptions& o)
{
  if (const std::string why = check_jobs(o, "validate"); !why.empty()) {
    std::cerr << why << "\n";
    return kBadInput;
  }
  if (o.shared_fabric)
    return dtsim::app::validate_shared_fabric(std::cout, std::cerr, shared_options(o));
  auto spec = dtsim::app::load_for_simulation(o.scenario, o.sets);
  // Every check run makes before it simulates, the memory fit included.
  const auto fit = dtsim::app::check_fit(spec);
  if (!fit.why_not_fitting.empty()) {
    dtsim::report::write_table(std::cout, dtsim::report::make_record(fit));
    return does_not_fit(fit);
  }
  std::cout << o.scenario << ": ok (" << dtsim::systems::system_kind(spec).summary(spec) << ")\n";
  return 0;
}

// A count option: an integer from 1 to `most`. (CLI11's PositiveNumber checks a double and prints its whole range,
// 300 digits long.)
CLI::Validator count_from_1_to(int64_t most)
{
  const std::string range = "1.." + std::to_string(most);
  return CLI::Validator(
      [most, range](std::string& v) -> std::string {
        int64_t n = 0;
        const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
        if (ec != std::errc() || end != v.data() + v.size() || n < 1 || n > most)
          return "expected an integer " + range + ", got '" + v + "'";
        return "";
      },
      range);
}

// A file name option given as "": refused rather than taken as "no file".
const CLI::Validator kNonEmpty(
    [](std::string& v) -> std::string { return v.empty() ? "expected a file name, got an empty one" : ""; }, "FILE");

// `dtsim runn`: CLI11 would only say that a subcommand is required; name the closest one.
std::string unknown_subcommand(CLI::App& app, int argc, char** argv)
{
  if (argc < 2 || argv[1][0] == '-')
    return "";
  std::vector<std::string> names;
  for (const auto* sub : app.get_subcommands([](CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  const std::string word = argv[1];
  if (std::find(names.begin(), names.end(), word) != names.end())
    return "";
  const std::string near = dtsim::config::closest(word, names);
  return "dtsim: unknown command '" + word + "'" + (near.empty() ? "" : "; did you mean '" + near + "'?") +
         " (commands: " + dtsim::config::join_list(names) + ")";
}

// --unset KEY, on every command that takes --set: removes a key the scenario gives (parallel.stage_layers when pp
// changes), or with hardware. or model. one its hardware or model file gives.
void add_unset(CLI::App* cmd, std::vector<std::string>& keys)
{
  cmd->add_option("--unset", keys,
                  "Remove a key the scenario gives, e.g. --unset parallel.stage_layers (repeatable; applied before "
                  "--set; a key the file does not give is an error)");
}

// The overrides a command applies: the unsets first (what the file gives, less them), then the --set values.
std::vector<std::string> with_unsets(const std::vector<std::string>& unsets, const std::vector<std::string>& sets)
{
  std::vector<std::string> all;
  for (const auto& key : unsets)
    all.push_back(dtsim::config::unset_entry(key));
  all.insert(all.end(), sets.begin(), sets.end());
  return all;
}

// Most processes a command may run at once; most plans a search lists; most devices a search may take.
constexpr int64_t kMaxJobs = 4096;
constexpr int64_t kMaxTop = 1000000;
constexpr int64_t kMaxSearchDevices = 1048576;

}  // namespace

int main(int argc, char** argv)
{
  dtsim::systems::install();
  if (const int handed_over = dtsim::cli::prepare_mpi(argv))
    return handed_over;
  CLI::App app{"dtsim: discrete-event simulation of one training step of a transformer on a GPU cluster"};
  app.set_version_flag("--version", std::string("dtsim ") + dtsim::kVersion);
  app.require_subcommand(1);
  RunOptions ro, vo;
  auto* run_cmd = app.add_subcommand("run", "Simulate one training step of a scenario and report where the time goes");
  run_cmd->add_option("scenario", ro.scenario, "Scenario YAML file")->required();
  run_cmd->add_option("more", ro.more, "More scenarios: jobs sharing the cluster's fabric (with --shared-fabric)");
  run_cmd->add_option("--set", ro.sets, "Override a scenario key, e.g. --set parallel.tp=8 (repeatable)");
  add_unset(run_cmd, ro.unsets);
  run_cmd->add_option("--format", ro.format, "Output format")->check(CLI::IsMember(dtsim::report::run_format_names()));
  {  // the catalogs' names, as the YAML check takes them (schedule; collectives.algorithm / protocol)
    std::string foot = "Schedules (scenario key schedule):\n";
    for (const auto& d : dtsim::scenario::schedule_registry())
      foot += std::string("  ") + d.name + ": " + d.summary + "\n";
    foot += "Collectives (hardware or stack key collectives: {algorithm, protocol}; auto: NCCL's choice):\n";
    for (const auto& a : dtsim::collectives::algorithms())
      foot += std::string("  ") + a.name + ": " + a.summary + "\n";
    for (const auto& p : dtsim::collectives::protocols())
      foot += std::string("  ") + p.name + ": " + p.summary + "\n";
    run_cmd->footer(foot);
  }
  run_cmd->add_option("--trace", ro.trace, "Write a Chrome trace-event JSON timeline (opens in Perfetto)")
      ->check(kNonEmpty);
  // Variability (docs/variability.md): the same as --set variability.samples=N and --set variability.seed=S.
  run_cmd->add_option_function<std::string>(
      "--samples", [&ro](const std::string& v) { ro.sets.push_back("variability.samples=" + v); },
      "Steps drawn under the scenario's variability; the report gives their mean and 5th/50th/95th percentiles");
  run_cmd->add_option_function<std::string>(
      "--seed", [&ro](const std::string& v) { ro.sets.push_back("variability.seed=" + v); },
      "Seed of the variability draws (the same seed, the same output)");
  // Several jobs on one cluster (app/shared_fabric.hpp); validate takes the same options.
  auto add_shared_fabric = [](CLI::App* cmd, RunOptions& o) {
    auto* flag = cmd->add_flag("--shared-fabric", o.shared_fabric,
                               "The scenarios are jobs on one cluster, each on nodes of its own, replayed together on "
                               "the same switch fabric; reports each job's step time alone and shared");
    cmd->add_option("--placement", o.placement, "Where the jobs' nodes go: packed (consecutive) or spread (in turn)")
        ->check(CLI::IsMember({"packed", "spread"}))
        ->needs(flag);
    cmd->add_option("--steps", o.steps, "Steps every job runs, at least, in the shared replay")
        ->check(count_from_1_to(1000))
        ->needs(flag);
    cmd->add_flag("--stagger", o.stagger, "Start job j j/n of its own step late instead of all at once (out of phase)")
        ->needs(flag);
  };
  add_shared_fabric(run_cmd, ro);
  auto* val_cmd = app.add_subcommand("validate", "Check a scenario and the files it names; simulate nothing");
  val_cmd->add_option("scenario", vo.scenario, "Scenario YAML file")->required();
  val_cmd->add_option("more", vo.more, "More scenarios: jobs sharing the cluster's fabric (with --shared-fabric)");
  val_cmd->add_option("--set", vo.sets, "Override a scenario key, e.g. --set parallel.tp=8 (repeatable)");
  add_unset(val_cmd, vo.unsets);
  add_shared_fabric(val_cmd, vo);
  dtsim::app::CompareOptions co;
  co.jobs = int(std::max(1u, std::thread::hardware_concurrency()));
  auto* cmp_cmd = app.add_subcommand("compare", "Put scenarios side by side: time, throughput, FLOP/s, memory, power, "
                                                "energy and the partitioning burden");
  cmp_cmd->add_option("scenarios", co.scenarios, "Scenario YAML files")->required();
  cmp_cmd->add_option("--set", co.sets,
                      "Override a key of every scenario, e.g. --set training.seq_len=4096 (repeatable)");
  std::vector<std::string> cmp_unsets, sweep_unsets, search_unsets, bench_unsets;
  add_unset(cmp_cmd, cmp_unsets);
  cmp_cmd->add_option("--format", co.format, "Output format")->check(CLI::IsMember({"table", "json"}));
  bool no_burden = false;
  cmp_cmd->add_flag("--no-burden", no_burden, "Do not simulate every parallel plan of the GPU scenarios");
  cmp_cmd->add_flag("--quiet", co.quiet, "No progress on standard error");
  cmp_cmd->add_option("--jobs", co.jobs, "Simulations run at once (processes)")->check(count_from_1_to(kMaxJobs));
  dtsim::app::SweepOptions wo;
  wo.jobs = co.jobs;
  auto* sweep_cmd = app.add_subcommand("sweep",
                                       "Simulate every point of the cartesian product of varied scenario keys; "
                                       "one row per point in PREFIX.csv and PREFIX.jsonl, resumable");
  std::vector<std::string> sweep_files;
  sweep_cmd->add_option("scenario", sweep_files, "Scenario YAML file(s); several make an outer axis 'scenario'")
      ->required();
  sweep_cmd->add_option("--vary", wo.vary, "KEY=V1,V2,... or a range KEY=A..BxF / KEY=A..B+S (repeatable)")
      ->allow_extra_args(false);
  sweep_cmd->add_option("--unset", sweep_unsets,
                        "Remove a key the scenario gives, at every point, e.g. --unset parallel.stage_layers with "
                        "--vary parallel.pp=... (repeatable)")
      ->allow_extra_args(false);
  sweep_cmd->add_option("--out", wo.out_prefix, "Write PREFIX.csv and PREFIX.jsonl (default: <scenario>-sweep)");
  sweep_cmd->add_option("--jobs", wo.jobs, "Simulations run at once (processes)")->check(count_from_1_to(kMaxJobs));
  sweep_cmd->add_flag("--quiet", wo.quiet, "No progress and no messages");
  dtsim::app::PlotOptions po;
  auto* plot_cmd = app.add_subcommand("plot", "Render a results CSV (from dtsim sweep) as SVG and PNG through gnuplot");
  plot_cmd->add_option("csv", po.csv, "Results CSV file")->required();
  plot_cmd->add_option("more", po.more_csv, "More results CSV files drawn on the same chart (columns matched by name)");
  plot_cmd->add_option("--kind", po.kind, "Chart kind")
      ->check(CLI::IsMember({"auto", "scaling", "whatif", "breakdown", "memory", "bars"}));
  plot_cmd->add_option("--x", po.x, "Column of the x axis");
  plot_cmd->add_option("--y", po.y, "Column of the y axis");
  plot_cmd->add_option("--group", po.group, "Column whose values make one series each");
  plot_cmd->add_option("--out", po.out_prefix, "Write PREFIX.gp, PREFIX.svg and PREFIX.png");
  plot_cmd->add_option("--title", po.title, "Chart title");
  dtsim::app::ReportOptions rpo;
  auto* report_cmd = app.add_subcommand("report", "Write a self-contained Markdown and HTML report of a results CSV: "
                                                  "inputs, table, charts, version and command");
  report_cmd->add_option("csv", rpo.csv, "Results CSV file (from dtsim sweep)")->required();
  report_cmd->add_option("--scenario", rpo.scenarios, "Scenario file the results came from (repeatable)");
  report_cmd->add_option("--out", rpo.out_dir, "Directory of the report (default: <csv>-report)");
  report_cmd->add_option("--title", rpo.title, "Report title");
  for (int i = 1; i < argc; ++i) {  // as a shell would take it back: single-quoted where needed
    std::string a = argv[i];
    if (a.empty() || a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=,:+") !=
                         std::string::npos)
      a = "'" + std::regex_replace(a, std::regex("'"), "'\\''") + "'";
    rpo.command += " " + a;
  }
  rpo.command = "dtsim" + rpo.command;
  dtsim::app::SearchOptions so;
  so.jobs = co.jobs;
  auto* search_cmd = app.add_subcommand("search", "Simulate every parallel plan for the scenario's model and cluster "
                                                  "and rank them by step time");
  search_cmd->add_option("scenario", so.scenario, "Scenario YAML file")->required();
  search_cmd->add_option("--set", so.sets, "Override a scenario key (repeatable)");
  add_unset(search_cmd, search_unsets);
  search_cmd->add_option("--devices", so.devices, "Search on this many devices instead of the scenario's")
      ->check(count_from_1_to(kMaxSearchDevices));
  search_cmd->add_option("--top", so.top, "Plans to list")->check(count_from_1_to(kMaxTop));
  search_cmd->add_option("--format", so.format, "Output format")->check(CLI::IsMember({"table", "json"}));
  search_cmd->add_option("--jobs", so.jobs, "Simulations run at once (processes)")->check(count_from_1_to(kMaxJobs));
  auto* narrow_flag = search_cmd->add_flag("--narrow", so.narrow, "The smaller plan space of dtsim compare");
  search_cmd->add_flag("--full-space", so.full_space,
                       "Also ZeRO 2 and 3 (plans without pipeline parallelism), each overlap option off and on, "
                       "and fp8 where the device has it; several times slower")
      ->excludes(narrow_flag);
  search_cmd->add_flag("--exhaustive", so.exhaustive,
                       "Simulate every plan that fits, also those whose lower bound on the step time shows they "
                       "cannot enter the top --top");
  search_cmd->add_flag("--quiet", so.quiet, "No progress and no messages");
  dtsim::app::CalibrateOptions cao;
  cao.jobs = co.jobs;
  auto* cal_cmd = app.add_subcommand("calibrate", "Fit a software stack's efficiency factors to measured step times "
                                                  "and write the calibrated stack");
  cal_cmd->add_option("runs", cao.runs_csv, "CSV of runs: scenario, measured_step_time_s[, set][, label]")->required();
  cal_cmd->add_option("--out", cao.out, "Stack YAML file to write")->required();
  cal_cmd->add_option("--stack", cao.base_stack, "Base stack (default: the first run's scenario's stack)");
  cal_cmd->add_option("--fit", cao.fit, "Factors to fit: compute, communication, memory, step_overhead "
                                         "(default: one per run up to two, compute first)")
      ->delimiter(',');
  cal_cmd->add_option("--check", cao.check_csv, "CSV of runs to report and record as held out, never fitted");
  cal_cmd->add_option("--name", cao.name, "Name of the written stack (default: the base's, marked calibrated)");
  cal_cmd->add_option("--jobs", cao.jobs, "Simulations run at once (processes)")->check(count_from_1_to(kMaxJobs));
  RunOptions eo;
  auto* exp_cmd = app.add_subcommand("explain", "List the kernels of one layer with their FLOPs, bytes and times");
  exp_cmd->add_option("scenario", eo.scenario, "Scenario YAML file")->required();
  exp_cmd->add_option("--set", eo.sets, "Override a scenario key, e.g. --set parallel.tp=8 (repeatable)");
  add_unset(exp_cmd, eo.unsets);
  std::string input_file, input_format = "table";
  auto* stack_cmd = app.add_subcommand("stack", "Print a software stack file as dtsim resolves it: every key, the "
                                                "file's value or the default it leaves to (marked \"(default)\"), "
                                                "quantities with units (JSON: SI units)");
  stack_cmd->add_option("file", input_file, "Stack YAML file (hardware/stacks/*.yaml)")->required();
  stack_cmd->add_option("--format", input_format, "Output format")->check(CLI::IsMember({"table", "json"}));
  auto* hw_cmd = app.add_subcommand("hardware", "Print a hardware file as dtsim resolves it: every key, the file's "
                                                "value or the default it leaves to (marked \"(default)\"), "
                                                "quantities with units (JSON: SI units)");
  hw_cmd->add_option("file", input_file, "Hardware YAML file (hardware/*.yaml)")->required();
  hw_cmd->add_option("--format", input_format, "Output format")->check(CLI::IsMember({"table", "json"}));
  dtsim::app::BenchOptions bo;
  bo.jobs = co.jobs;
  auto* bench_cmd = app.add_subcommand("bench", "Measure dtsim itself: wall time, user CPU, peak memory and "
                                                "activities per second of named cases, each run in a child process");
  bench_cmd->add_option("--case", bo.cases, "Case to run (repeatable; default: all but tiny; see --list; 'custom' is "
                                            "the --scenario case)");
  bench_cmd->add_option("--scenario", bo.scenario, "Also run this scenario as the case 'custom'");
  bench_cmd->add_option("--set", bo.sets, "Override a key of --scenario (repeatable)");
  add_unset(bench_cmd, bench_unsets);
  bench_cmd->add_option("--repeat", bo.repeat, "Runs of each case")->check(count_from_1_to(kMaxTop));
  bench_cmd->add_option("--jobs", bo.jobs, "Processes of the sweep and search cases")->check(count_from_1_to(kMaxJobs));
  bench_cmd->add_option("--root", bo.root,
                        "Directory holding scenarios/ (default: the current directory, else the repository above the "
                        "program's folder, else the source tree it was built from)");
  bench_cmd->add_option("--format", bo.format, "Output format")->check(CLI::IsMember({"table", "json"}));
  bench_cmd->add_flag("--list", bo.list, "List the cases and run nothing");
  if (const std::string why = unknown_subcommand(app, argc, argv); !why.empty()) {
    std::cerr << why << "\n";
    return kBadInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kBadInput;
  }
  for (RunOptions* o : {&ro, &vo, &eo})
    o->sets = with_unsets(o->unsets, o->sets);
  co.sets = with_unsets(cmp_unsets, co.sets);
  so.sets = with_unsets(search_unsets, so.sets);
  bo.sets = with_unsets(bench_unsets, bo.sets);
  wo.unsets = with_unsets(sweep_unsets, {});
  try {
    if (*run_cmd)
      return run(ro);
    if (*cal_cmd)
      return dtsim::app::calibrate(std::cout, std::cerr, cao);
    if (*bench_cmd)
      return dtsim::app::bench(std::cout, std::cerr, bo);
    if (*plot_cmd)
      return dtsim::app::plot(po, std::cerr);
    if (*report_cmd)
      return dtsim::app::write_report(rpo, std::cerr);
    if (*sweep_cmd) {
      wo.scenario = sweep_files.front();
      wo.more_scenarios.assign(sweep_files.begin() + 1, sweep_files.end());
      return dtsim::app::sweep(wo, std::cerr);
    }
    if (*search_cmd)
      return dtsim::app::search(std::cout, std::cerr, so);
    if (*cmp_cmd) {
      co.burden = !no_burden;
      return dtsim::app::compare(std::cout, co);
    }
    if (*stack_cmd) {
      dtsim::app::show_stack(std::cout, input_file, input_format);
      return 0;
    }
    if (*hw_cmd) {
      dtsim::app::show_hardware(std::cout, input_file, input_format);
      return 0;
    }
    if (*exp_cmd) {
      dtsim::systems::explain(std::cout, dtsim::app::load_for_simulation(eo.scenario, eo.sets));
      return 0;
    }
    return validate(vo);
  } catch (const dtsim::ConfigError& e) {
    std::cerr << e.what() << "\n";
    std::cerr << "dtsim: " << e.items().size() << " error" << (e.items().size() == 1 ? "" : "s") << " in the input\n";
    return kBadInput;
  } catch (const std::exception& e) {
    std::cerr << "dtsim: internal error: " << e.what() << "\n";
    return 1;
  }
}
