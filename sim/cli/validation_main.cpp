// dtsim_validation: simulates each published run of a reference table and compares it with the published figure:
// achieved TFLOP/s per device (metric tflops_per_gpu, recomputation counted), step time (metric step_time_s) or
// model FLOP utilisation (metric mfu, a fraction; recomputation not counted), or peak memory per device in GiB
// (metric peak_memory_gib: dtsim's estimate, simulating nothing, against a published measured figure), or the part
// of it PyTorch's caching allocator reserves (metric reserved_memory_gib: the peak less the CUDA context and the NCCL
// buffers, which CUDA and NCCL allocate outside the allocator; torch.cuda.memory_stats' reserved_bytes counts only the
// allocator's segments).
// Errors are given in throughput terms: positive means the simulation is faster than the published run; for memory,
// positive means dtsim counts more than was measured.
// Each row runs in a child process (SimGrid allows one engine per process). Prints a Markdown table; exits 1 when
// a row misses its bound or the mean absolute error misses its bound.
// --csv FILE also writes both series (published, simulated) as rows that `dtsim plot` reads (docs/studies.md).
// A sixth column, role, marks the runs a stack was calibrated on ("calibration"): they are shown but not held
// to the bounds, nor counted in the mean.
// Drift (issue 34, item 3): a scaling set's slope, the error at its largest run (most GPUs) less the error at its
// smallest (runs sharing a GPU count averaged; --drift-series S: only runs whose label contains S). Printed for every
// set; --drift-bound B fails it beyond B in absolute value (0.03: 3 points). `--drift CSV` reads the series an
// earlier run wrote with --csv and only checks the drift (ctest's validation.drift.*, without simulating again).
// From three GPU counts up it also prints the error's least-squares trend over the series (not bounded).
//   usage: dtsim_validation TABLE.csv [--row-bound 0.10] [--mean-bound 0.05] [--drift-bound 0.03]
//                           [--drift-series S] [--csv FILE]
//          dtsim_validation --drift SERIES.csv [--drift-bound 0.03] [--drift-series S]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <tuple>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>
#include <vector>

#include "app/load.hpp"
#include "systems/system_kinds.hpp"
#include "app/simulate.hpp"

namespace {

struct Row {
  std::string scenario, label, metric;
  bool calibration = false;  ///< a run the scenario's stack was calibrated on: shown, not held to the bounds
  double gpus = 0, published = 0, simulated = NAN, step_s = NAN;
  double error = NAN;  ///< in throughput terms: positive means the simulation is faster
};

struct Measured {
  double tflops = NAN, step_s = NAN, mfu = NAN, peak_gib = NAN, reserved_gib = NAN;
};

bool known_metric(const std::string& m)
{
  return m == "tflops_per_gpu" || m == "step_time_s" || m == "mfu" || m == "peak_memory_gib" ||
         m == "reserved_memory_gib";
}

// Runs one scenario in a child process; `memory_only`: estimates its memory per device without simulating.
Measured simulate_in_child(const std::string& scenario, bool memory_only)
{
  int fd[2];
  if (pipe(fd) != 0)
    return {NAN, NAN};
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    double out[5] = {NAN, NAN, NAN, NAN, NAN};
    try {
      auto spec = dtsim::app::load_for_simulation(scenario, {});
      auto r = memory_only ? dtsim::app::check_fit(spec) : dtsim::app::simulate(spec, false);
      out[3] = r.memory.peak_bytes() / double(1ull << 30);
      if (!r.memory.stages.empty())
        out[4] = out[3] - r.memory.stages[size_t(r.memory.peak_stage)].framework_bytes / double(1ull << 30);
      if (r.simulated) {
        out[1] = r.replay.step_time_s;
        out[0] = r.hardware_flops / out[1] / double(spec.devices) / 1e12;
        out[2] = r.model_flops / out[1] / double(spec.devices) / spec.hardware.peak_flops(spec.training.precision);
      }
    } catch (const std::exception& e) {
      std::cerr << scenario << ": " << e.what() << "\n";
    }
    ssize_t n = write(fd[1], out, sizeof out);
    _exit(n == sizeof out ? 0 : 1);
  }
  close(fd[1]);
  double in[5] = {NAN, NAN, NAN, NAN, NAN};
  ssize_t n = read(fd[0], in, sizeof in);
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (n != sizeof in)
    return {};
  return {in[0], in[1], in[2], in[3], in[4]};
}

// A set's slope: the mean error of its runs (those whose label contains `series`, every run when empty;
// calibration runs included, since a slope is the model's whatever was fitted) at the fewest GPUs and at the most.
struct Drift {
  double gpus_small = INFINITY, gpus_large = 0, error_small = 0, error_large = 0;
  int runs_small = 0, runs_large = 0;
  double points() const { return error_large - error_small; }
  bool defined() const { return runs_small > 0 && gpus_large > gpus_small; }
};

Drift scaling_drift(const std::vector<Row>& rows, const std::string& series)
{
  Drift d;
  auto in_series = [&](const Row& r) { return series.empty() || r.label.find(series) != std::string::npos; };
  for (const auto& r : rows)
    if (in_series(r)) {
      d.gpus_small = std::min(d.gpus_small, r.gpus);
      d.gpus_large = std::max(d.gpus_large, r.gpus);
    }
  for (const auto& r : rows) {
    if (!in_series(r))
      continue;
    if (r.gpus == d.gpus_small) {
      d.error_small += r.error;
      ++d.runs_small;
    }
    if (r.gpus == d.gpus_large) {
      d.error_large += r.error;
      ++d.runs_large;
    }
  }
  if (d.runs_small > 0) {
    d.error_small /= d.runs_small;
    d.error_large /= d.runs_large;
  }
  return d;
}

// The error's least-squares line against log2 of the GPU count over every run of the series (runs not averaged),
// carried from the fewest GPUs to the most: a slope that one row's scatter does not decide, as the endpoints alone
// do when a set's rows scatter by more than the bound. Defined from three GPU counts up; reported, never bounded.
struct Trend {
  double points = NAN, per_doubling = NAN;
  int runs = 0, gpu_counts = 0;
};

Trend error_trend(const std::vector<Row>& rows, const std::string& series)
{
  std::vector<std::pair<double, double>> xy;  // (log2 GPUs, error)
  std::vector<double> counts;
  for (const auto& r : rows)
    if ((series.empty() || r.label.find(series) != std::string::npos) && std::isfinite(r.error) && r.gpus > 0) {
      xy.emplace_back(std::log2(r.gpus), r.error);
      if (std::find(counts.begin(), counts.end(), r.gpus) == counts.end())
        counts.push_back(r.gpus);
    }
  Trend t;
  t.runs = int(xy.size());
  t.gpu_counts = int(counts.size());
  if (t.gpu_counts < 3)
    return t;
  double mx = 0, my = 0;
  for (const auto& [x, y] : xy) {
    mx += x / xy.size();
    my += y / xy.size();
  }
  double sxy = 0, sxx = 0;
  for (const auto& [x, y] : xy) {
    sxy += (x - mx) * (y - my);
    sxx += (x - mx) * (x - mx);
  }
  t.per_doubling = sxy / sxx;
  const auto [lo, hi] = std::minmax_element(counts.begin(), counts.end());
  t.points = t.per_doubling * std::log2(*hi / *lo);
  return t;
}

// Prints the drift; whether it is within `bound` (NaN: not bounded, always true).
bool report_drift(const std::vector<Row>& rows, const std::string& series, double bound)
{
  const Drift d = scaling_drift(rows, series);
  if (!d.defined()) {
    std::printf("Drift: no runs of '%s' at two GPU counts\n", series.c_str());
    return std::isnan(bound);
  }
  const bool ok = std::isnan(bound) || (std::isfinite(d.points()) && std::fabs(d.points()) <= bound);
  std::printf("Drift%s%s%s: %+.1f%% at %.0f GPUs (%d run%s), %+.1f%% at %.0f GPUs (%d run%s): %+.1f points",
              series.empty() ? "" : " of '", series.c_str(), series.empty() ? "" : "'", 100 * d.error_small,
              d.gpus_small, d.runs_small, d.runs_small == 1 ? "" : "s", 100 * d.error_large, d.gpus_large,
              d.runs_large, d.runs_large == 1 ? "" : "s", 100 * d.points());
  if (std::isnan(bound))
    std::printf(" (not bounded)\n");
  else
    std::printf(" (bound %.0f points): %s\n", 100 * bound, ok ? "met" : "NOT met");
  const Trend t = error_trend(rows, series);
  if (std::isfinite(t.points))
    std::printf("Trend over %d runs at %d GPU counts (least squares on log2 GPUs): %+.1f points, %+.2f per doubling\n",
                t.runs, t.gpu_counts, 100 * t.points, 100 * t.per_doubling);
  return ok;
}

// --drift FILE: the drift of a series CSV that an earlier run wrote with --csv, without simulating again.
int drift_of_csv(const std::string& path, const std::string& series, double bound)
{
  std::ifstream in(path);
  std::string header;
  if (!in || !std::getline(in, header)) {
    std::cerr << "dtsim_validation: cannot read " << path << "\n";
    return 2;
  }
  const bool by_time = header.find("step_time_s") != std::string::npos;
  std::vector<Row> published, simulated;
  for (std::string line; std::getline(in, line);) {
    std::stringstream ss(line);
    std::string gpus, which, label, value;
    std::getline(ss, gpus, ',');
    std::getline(ss, which, ',');
    std::getline(ss, label, ',');
    std::getline(ss, value, ',');
    Row r;
    r.label = label;
    r.gpus = std::stod(gpus);
    r.published = value.empty() ? NAN : std::stod(value);
    (which == "published" ? published : simulated).push_back(r);
  }
  if (published.size() != simulated.size()) {
    std::cerr << "dtsim_validation: " << path << ": " << published.size() << " published rows, expected as many as the "
              << simulated.size() << " simulated\n";
    return 2;
  }
  for (size_t i = 0; i < published.size(); ++i) {
    const double p = published[i].published, v = simulated[i].published;
    published[i].error = by_time ? p / v - 1 : (v - p) / p;
  }
  return report_drift(published, series, bound) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv)
{
  dtsim::systems::install();
  if (argc < 2) {
    std::cerr << "usage: dtsim_validation TABLE.csv [--row-bound 0.10] [--mean-bound 0.05] [--drift-bound 0.03] "
                 "[--csv FILE]\n";
    return 2;
  }
  double row_bound = 0.10, mean_bound = 0.05, drift_bound = NAN;
  std::string csv_path, drift_series, drift_csv;
  const bool drift_only = std::string(argv[1]) == "--drift";
  if (drift_only && argc > 2)
    drift_csv = argv[2];
  for (int i = drift_only ? 3 : 2; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--row-bound")
      row_bound = std::stod(argv[i + 1]);
    else if (k == "--mean-bound")
      mean_bound = std::stod(argv[i + 1]);
    else if (k == "--drift-bound")
      drift_bound = std::stod(argv[i + 1]);
    else if (k == "--drift-series")
      drift_series = argv[i + 1];
    else if (k == "--csv")
      csv_path = argv[i + 1];
    else {
      std::cerr << "dtsim_validation: unknown option '" << k
                << "' (expected --row-bound, --mean-bound, --drift-bound, --drift-series or --csv)\n";
      return 2;
    }
  }
  if (drift_only)
    return drift_of_csv(drift_csv, drift_series, drift_bound);
  std::ifstream in(argv[1]);
  if (!in) {
    std::cerr << "cannot read " << argv[1] << "\n";
    return 2;
  }
  std::vector<Row> rows;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || line.rfind("scenario,", 0) == 0)
      continue;
    std::stringstream ss(line);
    Row r;
    std::string f;
    std::getline(ss, r.scenario, ',');
    std::getline(ss, r.label, ',');
    std::getline(ss, f, ',');
    r.gpus = std::stod(f);
    std::getline(ss, r.metric, ',');
    std::getline(ss, f, ',');
    r.published = std::stod(f);
    std::string role;
    std::getline(ss, role, ',');
    if (!role.empty() && role != "calibration" && role != "check") {
      std::cerr << argv[1] << ": unknown role '" << role << "' (expected calibration, check or nothing)\n";
      return 2;
    }
    r.calibration = role == "calibration";
    if (!known_metric(r.metric)) {
      std::cerr << argv[1] << ": unknown metric '" << r.metric
                << "' (expected tflops_per_gpu, step_time_s, mfu, peak_memory_gib or reserved_memory_gib)\n";
      return 2;
    }
    rows.push_back(r);
  }
  double sum_abs = 0;
  int held_to_bounds = 0;
  bool ok = true;
  std::printf("| run | GPUs | metric | published | simulated | error |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (auto& r : rows) {
    const bool by_reserved = r.metric == "reserved_memory_gib";
    const bool by_memory = r.metric == "peak_memory_gib" || by_reserved;
    const Measured m = simulate_in_child(r.scenario, by_memory);
    r.step_s = m.step_s;
    const bool by_time = r.metric == "step_time_s";
    r.simulated = by_time ? r.step_s
                  : by_reserved ? m.reserved_gib
                  : by_memory ? m.peak_gib
                  : r.metric == "mfu" ? m.mfu : m.tflops;
    double err = by_time ? r.published / r.simulated - 1 : (r.simulated - r.published) / r.published;
    r.error = err;
    bool row_ok = std::isfinite(err) && std::fabs(err) <= row_bound;
    if (!r.calibration) {  // calibration runs fitted the stack: their error says nothing about its accuracy
      ok = ok && row_ok;
      sum_abs += std::isfinite(err) ? std::fabs(err) : 1.0;
      ++held_to_bounds;
    }
    std::printf("| %s | %.0f | %s | %.2f | %.2f | %+.1f%%%s |\n", r.label.c_str(), r.gpus,
                by_time     ? "step time (s)"
                : by_reserved ? "reserved memory (GiB)"
                : by_memory ? "peak memory (GiB)"
                : r.metric == "mfu" ? "MFU"
                                    : "TFLOP/s per GPU",
                r.published, r.simulated,
                100 * err,
                r.calibration ? " (calibration run)" : row_ok ? "" : " (out of bound)");
  }
  if (!csv_path.empty()) {
    std::ofstream csv(csv_path);
    const std::string first = rows.empty() ? "" : rows.front().metric;
    csv << "devices,series,run,"
        << (first == "step_time_s"       ? "step_time_s"
            : first == "peak_memory_gib" ? "peak_memory_gib"
            : first == "reserved_memory_gib" ? "reserved_memory_gib"
                                         : "hardware_tflops_per_device")
        << ",status\n";
    char b[64];
    for (const char* series : {"published", "simulated"})
      for (const auto& r : rows) {
        const double v = std::string(series) == "published" ? r.published : r.simulated;
        std::snprintf(b, sizeof b, "%.6g", v);
        csv << r.gpus << "," << series << "," << r.label << "," << (std::isfinite(v) ? b : "") << ","
            << (std::isfinite(v) ? "ok" : "error") << "\n";
      }
    if (!csv) {
      std::cerr << "dtsim_validation: cannot write " << csv_path << "\n";
      return 2;
    }
  }
  double mae = held_to_bounds == 0 ? 0 : sum_abs / double(held_to_bounds);
  bool mean_ok = mae <= mean_bound;
  std::printf("\nMean absolute error: %.1f%% over %d runs not used for calibration (bound %.0f%%); per-row bound "
              "%.0f%%: %s\n",
              100 * mae, held_to_bounds, 100 * mean_bound, 100 * row_bound, ok && mean_ok ? "met" : "NOT met");
  const bool drift_ok = report_drift(rows, drift_series, drift_bound);
  return ok && mean_ok && drift_ok ? 0 : 1;
}
