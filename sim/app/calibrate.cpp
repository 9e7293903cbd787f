#include "app/calibrate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <ostream>
#include <sstream>

#include "app/calibration_runs.hpp"
#include "app/load.hpp"
#include "core/child_process.hpp"
#include "app/plot.hpp"
#include "app/simulate.hpp"
#include "config/input_file.hpp"
#include "core/diagnostics.hpp"
#include "core/version.hpp"
#include "scenario/scenario_spec.hpp"
#include "systems/system_kinds.hpp"
#include "stack/stack_yaml.hpp"

namespace dtsim::app {

namespace {

using stack::Factors;
using Run = CalibrationRun;

// Multiplicative factors are fitted in log space within the range the stack loader accepts.
constexpr double kFactorMin = 0.05, kFactorMax = 20;
// A factor whose 2% change moves no run's log step time by more than 1% of that (0.02%) is not determined.
constexpr double kProbe = 0.02, kMinSensitivity = 0.01;
// Two factors whose effects on the runs correlate more than this cannot be told apart.
constexpr double kMaxCorrelation = 0.995;

std::string read_input_or_throw(const std::string& path)
{
  std::string text;
  if (std::string problem = config::read_input_file(path, text); !problem.empty())
    throw_config_error({path, 0, 0}, "", problem);  // a pipe or a device is refused before it is opened
  return text;
}



bool is_log_factor(const std::string& name) { return name != "step_overhead"; }

// The fit's parameters: log(factor) for multiplicative factors, seconds for the per-step overhead.
std::vector<double> to_params(const Factors& f, const std::vector<std::string>& names)
{
  std::vector<double> p;
  for (const auto& n : names)
    p.push_back(is_log_factor(n) ? std::log(stack::factor_value(f, n)) : stack::factor_value(f, n));
  return p;
}

Factors to_factors(Factors base, const std::vector<std::string>& names, const std::vector<double>& p)
{
  for (size_t j = 0; j < names.size(); ++j)
    stack::set_factor(base, names[j], is_log_factor(names[j]) ? std::exp(p[j]) : p[j]);
  return base;
}

std::vector<double> clamp_params(std::vector<double> p, const std::vector<std::string>& names)
{
  for (size_t j = 0; j < names.size(); ++j)
    p[j] = is_log_factor(names[j]) ? std::clamp(p[j], std::log(kFactorMin), std::log(kFactorMax)) : std::max(0.0, p[j]);
  return p;
}

// Simulates runs under factors, each in a child process; NaN where a plan does not fit or the simulation failed.
class Evaluator {
 public:
  Evaluator(std::vector<scenario::ScenarioSpec> specs, int jobs) : specs_(std::move(specs)), jobs_(jobs) {}
  size_t size() const { return specs_.size(); }
  const scenario::ScenarioSpec& spec(size_t i) const { return specs_[i]; }

  /// Step time of run `runs[q]` under `factors[q]`, for every q.
  std::vector<double> step_times(const std::vector<size_t>& runs, const std::vector<Factors>& factors)
  {
    std::vector<std::function<std::vector<double>()>> work;
    for (size_t q = 0; q < runs.size(); ++q) {
      scenario::ScenarioSpec s = specs_[runs[q]];
      scenario::set_stack_factors(s, factors[q]);
      work.push_back([s]() {
        auto r = simulate(s, false);
        return std::vector<double>{r.simulated ? r.replay.step_time_s : NAN};
      });
    }
    simulations_ += work.size();
    auto results = run_in_children(work, jobs_);
    std::vector<double> out;
    for (const auto& r : results)
      out.push_back(r && !r->empty() ? r->front() : NAN);
    return out;
  }
  size_t simulations() const { return simulations_; }

 private:
  std::vector<scenario::ScenarioSpec> specs_;
  int jobs_;
  size_t simulations_ = 0;
};

struct Fit {
  Factors factors;
  std::vector<double> simulated;  ///< step time of each fitted run under the fitted factors
};

// Least squares on log(simulated / measured) over the runs `subset`, Levenberg-Marquardt with forward differences.
// `at_base`: the subset's step times under `base`, already simulated by the caller.
Fit fit_factors(Evaluator& ev, const std::vector<Run>& runs, const std::vector<size_t>& subset, const Factors& base,
                const std::vector<std::string>& names, std::vector<double> at_base)
{
  const size_t n = subset.size(), k = names.size();
  auto residuals = [&](const std::vector<double>& times) {
    std::vector<double> r(n);
    for (size_t i = 0; i < n; ++i)
      r[i] = std::log(times[i] / runs[subset[i]].measured_s);
    return r;
  };
  auto cost = [](const std::vector<double>& r) {
    double c = 0;
    for (double x : r)
      c += x * x;
    return c;
  };
  double mean_measured = 0;
  for (size_t i : subset)
    mean_measured += runs[i].measured_s / double(n);
  std::vector<double> p = to_params(base, names);
  std::vector<double> times = std::move(at_base);
  std::vector<double> r = residuals(times);
  double lambda = 1e-3;
  for (int it = 0; it < 40 && cost(r) > 1e-16; ++it) {
    // Jacobian of the residuals, all its simulations at once.
    std::vector<size_t> q_runs;
    std::vector<Factors> q_factors;
    std::vector<double> steps(k);
    for (size_t j = 0; j < k; ++j) {
      steps[j] = is_log_factor(names[j]) ? kProbe : kProbe * mean_measured;
      std::vector<double> pj = p;
      pj[j] += steps[j];
      for (size_t i = 0; i < n; ++i) {
        q_runs.push_back(subset[i]);
        q_factors.push_back(to_factors(base, names, pj));
      }
    }
    const std::vector<double> probed = ev.step_times(q_runs, q_factors);
    std::vector<std::vector<double>> J(n, std::vector<double>(k));
    for (size_t j = 0; j < k; ++j)
      for (size_t i = 0; i < n; ++i)
        J[i][j] = (std::log(probed[j * n + i] / runs[subset[i]].measured_s) - r[i]) / steps[j];
    // Normal equations with Marquardt's damping; k <= 4, solved by Gaussian elimination.
    bool improved = false;
    for (int tries = 0; tries < 8 && !improved; ++tries) {
      std::vector<std::vector<double>> A(k, std::vector<double>(k + 1, 0.0));
      for (size_t a = 0; a < k; ++a) {
        for (size_t b = 0; b < k; ++b)
          for (size_t i = 0; i < n; ++i)
            A[a][b] += J[i][a] * J[i][b];
        for (size_t i = 0; i < n; ++i)
          A[a][k] -= J[i][a] * r[i];
      }
      for (size_t a = 0; a < k; ++a)
        A[a][a] *= 1 + lambda;
      for (size_t c = 0; c < k; ++c) {
        size_t piv = c;
        for (size_t a = c + 1; a < k; ++a)
          if (std::fabs(A[a][c]) > std::fabs(A[piv][c]))
            piv = a;
        std::swap(A[c], A[piv]);
        if (std::fabs(A[c][c]) < 1e-300)
          break;
        for (size_t a = 0; a < k; ++a)
          if (a != c) {
            const double m = A[a][c] / A[c][c];
            for (size_t b = c; b <= k; ++b)
              A[a][b] -= m * A[c][b];
          }
      }
      std::vector<double> trial = p;
      double largest_step = 0;
      for (size_t a = 0; a < k; ++a) {
        const double d = std::fabs(A[a][a]) > 1e-300 ? A[a][k] / A[a][a] : 0.0;
        trial[a] += d;
        largest_step = std::max(largest_step, std::fabs(d) / (is_log_factor(names[a]) ? 1.0 : mean_measured));
      }
      trial = clamp_params(trial, names);
      const std::vector<double> t2 = ev.step_times(subset, std::vector<Factors>(n, to_factors(base, names, trial)));
      const std::vector<double> r2 = residuals(t2);
      if (cost(r2) < cost(r)) {
        p = trial, times = t2, r = r2;
        lambda /= 3;
        improved = true;
        if (largest_step < 1e-6)
          it = 1000;  // converged
      } else {
        lambda *= 4;
      }
    }
    if (!improved)
      break;
  }
  return {to_factors(base, names, p), times};
}

// Refuses factors the runs cannot determine: one that moves no run, or two that move the runs alike.
// Returns the runs' step times under `base` (simulated for the check, reused by the caller).
std::vector<double> check_determined(Evaluator& ev, const std::vector<Run>& runs, const Factors& base,
                                     const std::vector<std::string>& names, const std::string& csv)
{
  const size_t n = runs.size(), k = names.size();
  std::vector<size_t> all(n);
  for (size_t i = 0; i < n; ++i)
    all[i] = i;
  double mean_measured = 0;
  for (const auto& r : runs)
    mean_measured += r.measured_s / double(n);
  std::vector<size_t> q_runs;
  std::vector<Factors> q_factors;
  for (size_t j = 0; j <= k; ++j)
    for (size_t i = 0; i < n; ++i) {
      std::vector<double> p = to_params(base, names);
      if (j < k)
        p[j] += is_log_factor(names[j]) ? kProbe : kProbe * mean_measured;
      q_runs.push_back(i);
      q_factors.push_back(to_factors(base, names, p));
    }
  const std::vector<double> t = ev.step_times(q_runs, q_factors);
  for (size_t i = 0; i < n; ++i)
    if (std::isnan(t[k * n + i]))
      throw_config_error(runs[i].where, "scenario",
                         "the run '" + runs[i].label +
                             "' could not be simulated (its plan does not fit in memory, or it failed): "
                             "run dtsim run " +
                             runs[i].scenario + " to see why");
  std::vector<std::vector<double>> sens(k, std::vector<double>(n));  // d log t / d parameter, per 2% probe
  for (size_t j = 0; j < k; ++j) {
    double most = 0;
    for (size_t i = 0; i < n; ++i) {
      sens[j][i] = std::log(t[j * n + i] / t[k * n + i]) / kProbe;
      most = std::max(most, std::fabs(sens[j][i]));
    }
    if (most < kMinSensitivity) {
      char b[400];
      std::snprintf(b, sizeof b,
                    "the factor '%s' cannot be determined by these runs: a 2%% change of it moves no run's simulated "
                    "step time by more than %.3f%% (expected at least %.2f%%); fit other factors, or add runs where "
                    "what it scales takes a visible share of the step",
                    names[j].c_str(), 100 * most * kProbe, 100 * kMinSensitivity * kProbe);
      throw_config_error({csv, 0, 0}, "--fit", b);
    }
  }
  for (size_t a = 0; a < k; ++a)
    for (size_t b = a + 1; b < k; ++b) {
      double ab = 0, aa = 0, bb = 0;
      for (size_t i = 0; i < n; ++i)
        ab += sens[a][i] * sens[b][i], aa += sens[a][i] * sens[a][i], bb += sens[b][i] * sens[b][i];
      const double corr = std::fabs(ab) / std::sqrt(aa * bb);
      if (corr > kMaxCorrelation) {
        char m[400];
        std::snprintf(m, sizeof m,
                      "the factors '%s' and '%s' change these runs' step times in the same proportions (correlation "
                      "%.4f): the runs cannot tell them apart; fit one of them, or add a run where their shares of "
                      "the step differ",
                      names[a].c_str(), names[b].c_str(), corr);
        throw_config_error({csv, 0, 0}, "--fit", m);
      }
    }
  return std::vector<double>(t.begin() + long(k * n), t.end());
}

std::string today()
{
  // SOURCE_DATE_EPOCH (reproducible builds) fixes the date, so that the same inputs give the same file.
  std::time_t now = std::time(nullptr);
  if (const char* e = std::getenv("SOURCE_DATE_EPOCH"))
    now = std::time_t(std::strtoll(e, nullptr, 10));
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%d", std::gmtime(&now));
  return b;
}

std::string percent(double x)
{
  char b[32];
  std::snprintf(b, sizeof b, "%+.1f%%", 100 * x);
  return b;
}

std::string seconds(double x)
{
  char b[32];
  std::snprintf(b, sizeof b, "%.4g s", x);
  return b;
}

// The base stack's text without the sections calibrate writes (factors, calibration, an earlier provenance
// block) and with its name replaced; the rest, citations included, is kept as written.
std::string base_text_without_calibration(const std::string& text, const std::string& name)
{
  std::istringstream in(text);
  std::string out;
  bool skipping = false, in_provenance = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# --- dtsim calibrate", 0) == 0) {
      in_provenance = true;
      continue;
    }
    if (in_provenance) {
      if (line.rfind("# --- end of calibration", 0) == 0)
        in_provenance = false;
      continue;
    }
    const bool top_level = !line.empty() && line[0] != ' ' && line[0] != '\t';
    if (top_level)
      skipping = line.rfind("factors:", 0) == 0 || line.rfind("calibration:", 0) == 0;
    if (skipping)
      continue;
    if (line.rfind("name:", 0) == 0)
      line = "name: \"" + name + "\"";
    out += line + "\n";
  }
  return out;
}

}  // namespace

int calibrate(std::ostream& out, std::ostream& err, const CalibrateOptions& o)
{
  // The base stack: --stack, else the first run's scenario's (its own or its hardware's default).
  std::string base_path = o.base_stack.empty()
                              ? std::string()
                              : std::filesystem::absolute(o.base_stack).lexically_normal().string();
  std::vector<Run> runs = read_calibration_runs(o.runs_csv, base_path);
  if (base_path.empty()) {
    auto first = load_for_simulation(runs.front().scenario, runs.front().sets);
    if (first.stack.given()) {
      base_path = std::filesystem::absolute(first.stack.file).lexically_normal().string();
      for (auto& r : runs)
        r.sets.push_back("stack=" + base_path);
    }
  }
  std::vector<Run> checks = o.check_csv.empty() ? std::vector<Run>{} : read_calibration_runs(o.check_csv, base_path);
  std::vector<scenario::ScenarioSpec> specs;
  for (const auto& r : runs)
    specs.push_back(load_for_simulation(r.scenario, r.sets));
  for (const auto& r : checks)
    specs.push_back(load_for_simulation(r.scenario, r.sets));
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string why_not = systems::system_kind(specs[i]).why_no_stack_calibration();
    if (!why_not.empty())
      throw_config_error((i < runs.size() ? runs[i] : checks[i - runs.size()]).where, "scenario", why_not);
  }
  const stack::StackSpec base = specs.front().stack;

  // The factors: --fit, else one per run up to two, the compute factor first.
  std::vector<std::string> names = o.fit;
  if (names.empty())
    for (size_t j = 0; j < std::min<size_t>(2, runs.size()); ++j)
      names.push_back(stack::factor_names()[j]);
  for (size_t j = 0; j < names.size(); ++j) {
    const auto& known = stack::factor_names();
    if (std::find(known.begin(), known.end(), names[j]) == known.end())
      throw_config_error({"<command line> --fit", 0, 0}, "--fit",
                         "unknown factor '" + names[j] + "'; expected compute, communication, memory or step_overhead");
    if (std::find(names.begin(), names.begin() + long(j), names[j]) != names.begin() + long(j))
      throw_config_error({"<command line> --fit", 0, 0}, "--fit", "the factor '" + names[j] + "' is named twice");
  }
  if (names.size() > runs.size())
    throw_config_error({o.runs_csv, 0, 0}, "--fit",
                       "expected at most as many factors as runs: " + std::to_string(names.size()) +
                           " factors cannot be fitted on " + std::to_string(runs.size()) +
                           (runs.size() == 1 ? " run" : " runs"));

  // The fitted factors start from no correction, so that "before" is the uncalibrated model and a stack calibrated
  // again from its own file gives the same result; the other factors keep the base stack's values.
  Factors base_factors = base.factors;
  for (const auto& n : names)
    stack::set_factor(base_factors, n, stack::factor_value(Factors{}, n));
  for (auto& s : specs)
    scenario::set_stack_factors(s, base_factors);
  Evaluator ev(specs, std::max(1, o.jobs));
  std::vector<Run> all_runs(runs);
  all_runs.insert(all_runs.end(), checks.begin(), checks.end());
  const std::vector<double> fitted_before = check_determined(ev, runs, base_factors, names, o.runs_csv);

  std::vector<size_t> idx(runs.size()), check_idx;
  for (size_t i = 0; i < runs.size(); ++i)
    idx[i] = i;
  for (size_t i = 0; i < checks.size(); ++i)
    check_idx.push_back(runs.size() + i);
  std::vector<size_t> everything = idx;
  everything.insert(everything.end(), check_idx.begin(), check_idx.end());
  std::vector<double> before = fitted_before;
  const std::vector<double> checks_before =
      ev.step_times(check_idx, std::vector<Factors>(check_idx.size(), base_factors));
  before.insert(before.end(), checks_before.begin(), checks_before.end());
  const Fit fit = fit_factors(ev, all_runs, idx, base_factors, names, fitted_before);
  const std::vector<double> after_checks =
      check_idx.empty() ? std::vector<double>{}
                        : ev.step_times(check_idx, std::vector<Factors>(check_idx.size(), fit.factors));
  for (size_t i = 0; i < everything.size(); ++i)
    if (std::isnan(before[i]))
      throw_config_error(all_runs[i].where, "scenario",
                         "the run '" + all_runs[i].label + "' could not be simulated: run dtsim run " +
                             all_runs[i].scenario + " to see why");

  // Leave-one-out: each run predicted by a fit on the others (needs more runs than factors).
  std::vector<double> loo;
  if (runs.size() >= 3 && names.size() <= runs.size() - 1)
    for (size_t left = 0; left < runs.size(); ++left) {
      std::vector<size_t> rest;
      for (size_t i : idx)
        if (i != left)
          rest.push_back(i);
      std::vector<double> rest_before;
      for (size_t i : rest)
        rest_before.push_back(fitted_before[i]);
      const Fit f = fit_factors(ev, all_runs, rest, base_factors, names, rest_before);
      loo.push_back(ev.step_times({left}, {f.factors}).front() / runs[left].measured_s - 1);
    }

  // Report.
  std::string factor_list;
  for (const auto& n : names)
    factor_list += (factor_list.empty() ? "" : ", ") + n;
  out << "dtsim calibrate: " << runs.size() << (runs.size() == 1 ? " run" : " runs") << " of " << o.runs_csv
      << ", fitting " << factor_list << " of stack '" << (base.given() ? base.name : "(none)") << "'"
      << (base.given() ? " (" + base.file + ")" : "") << "\n";
  out << "errors are in step time: simulated / measured - 1\n\n";
  char line[512];
  auto row = [&](const std::string& label, double measured, double b, double a, const std::string& extra) {
    std::snprintf(line, sizeof line, "  %-36s %12s %12s %8s %12s %8s%s\n", label.substr(0, 36).c_str(),
                  seconds(measured).c_str(), seconds(b).c_str(), percent(b / measured - 1).c_str(),
                  seconds(a).c_str(), percent(a / measured - 1).c_str(), extra.c_str());
    out << line;
  };
  std::snprintf(line, sizeof line, "  %-36s %12s %12s %8s %12s %8s\n", "run", "measured", "before", "error", "after",
                "error");
  out << line;
  for (size_t i = 0; i < runs.size(); ++i)
    row(runs[i].label, runs[i].measured_s, before[i], fit.simulated[i],
        loo.empty() ? "" : "  leave-one-out " + percent(loo[i]));
  for (size_t i = 0; i < checks.size(); ++i)
    row(checks[i].label + " (check)", checks[i].measured_s, before[runs.size() + i], after_checks[i], "");
  out << "\n  fitted factors:";
  for (const auto& n : names) {
    std::snprintf(line, sizeof line, " %s %.4g (was %.4g)", n.c_str(), stack::factor_value(fit.factors, n),
                  stack::factor_value(base_factors, n));
    out << line;
  }
  out << "\n";
  std::vector<double> heldout = loo;
  for (size_t i = 0; i < checks.size(); ++i)
    heldout.push_back(after_checks[i] / checks[i].measured_s - 1);
  auto mae = [](const std::vector<double>& e) {
    double s = 0;
    for (double x : e)
      s += std::fabs(x);
    return e.empty() ? 0.0 : s / double(e.size());
  };
  if (!loo.empty())
    out << "  leave-one-out: mean absolute error " << percent(mae(loo)).substr(1) << " over " << loo.size()
        << " runs\n";
  if (!checks.empty()) {
    std::vector<double> ce(heldout.end() - long(checks.size()), heldout.end());
    out << "  check runs (not fitted): mean absolute error " << percent(mae(ce)).substr(1) << " over " << ce.size()
        << " runs\n";
  }
  if (heldout.empty())
    out << "  no held-out error: runs predicted with this stack get no interval (add --check runs, or three runs "
           "or more)\n";

  // The stack file.
  const std::string name = !o.name.empty() ? o.name
                           : base.given()  ? base.name + " (calibrated on " +
                                                std::filesystem::path(o.runs_csv).filename().string() + ")"
                                           : "calibrated on " + std::filesystem::path(o.runs_csv).filename().string();
  std::string text = base.given() ? base_text_without_calibration(read_input_or_throw(base.file), name)
                                  : "# A software stack made by dtsim calibrate from no base stack: every modelled "
                                    "correction at its default.\nname: \"" +
                                        name + "\"\n";
  std::ostringstream y;
  y << text;
  y << "# --- dtsim calibrate " << kVersion << ", " << today() << ": fitted " << factor_list << " on "
    << runs.size() << (runs.size() == 1 ? " run" : " runs") << " of " << o.runs_csv << " ---\n";
  for (size_t i = 0; i < runs.size(); ++i)
    y << "#   fitted: " << runs[i].label << " (" << runs[i].scenario << "): measured " << seconds(runs[i].measured_s)
      << ", simulated " << seconds(before[i]) << " before, " << seconds(fit.simulated[i]) << " after (residual "
      << percent(fit.simulated[i] / runs[i].measured_s - 1) << ")"
      << (loo.empty() ? "" : ", leave-one-out " + percent(loo[i])) << "\n";
  for (size_t i = 0; i < checks.size(); ++i)
    y << "#   check: " << checks[i].label << " (" << checks[i].scenario << "): measured "
      << seconds(checks[i].measured_s) << ", simulated " << seconds(before[runs.size() + i]) << " before, "
      << seconds(after_checks[i]) << " after (error " << percent(after_checks[i] / checks[i].measured_s - 1) << ")\n";
  y << "# --- end of calibration provenance ---\n";
  y << "factors:\n";
  for (const auto& n : stack::factor_names()) {
    const double v = stack::factor_value(fit.factors, n);
    std::snprintf(line, sizeof line, n == "step_overhead" ? "  %s: %.9g s\n" : "  %s: %.9g\n", n.c_str(), v);
    y << line;
  }
  y << "calibration:\n  runs: " << runs.size() << "\n  heldout_errors: [";
  for (size_t i = 0; i < heldout.size(); ++i) {
    std::snprintf(line, sizeof line, "%s%.6f", i ? ", " : "", heldout[i]);
    y << line;
  }
  y << "]\n";
  std::ofstream f(o.out);
  if (!f)
    throw_config_error({o.out, 0, 0}, "--out", "cannot write the stack file");
  f << y.str();
  f.close();
  out << "\nwrote " << o.out << " (" << ev.simulations() << " simulations)\n";
  (void)err;
  return 0;
}

}  // namespace dtsim::app
