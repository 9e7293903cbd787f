#include "app/search.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <limits>
#include <map>
#include <cstdio>
#include <ostream>

#include <sys/resource.h>

#include <nlohmann/json.hpp>

#include "app/load.hpp"
#include "app/mpi_workers.hpp"
#include "app/progress.hpp"
#include "app/search_bounds.hpp"
#include "app/search_plans.hpp"
#include "app/search_replay_key.hpp"
#include "app/simulate.hpp"
#include "core/diagnostics.hpp"
#include "core/version.hpp"
#include "parallel/plan_space.hpp"
#include "report/run_record.hpp"
#include "systems/system_kinds.hpp"

namespace dtsim::app {

namespace {

using json = nlohmann::ordered_json;

struct Ranked {
  size_t index = 0;
  double step = 0, samples = 0, mfu = 0, peak_mem = 0;
};

// User plus system CPU seconds of this process and of its reaped children (the bound workers and the simulations run
// in forked children), for the log's split of a search's CPU by phase.
double cpu_seconds()
{
  double total = 0;
  for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage u{};
    getrusage(who, &u);
    total += double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  }
  return total;
}

bool same_plan(const scenario::ScenarioSpec& a, const scenario::ScenarioSpec& b)
{
  return a.parallel.tp == b.parallel.tp && a.parallel.pp == b.parallel.pp && a.parallel.dp == b.parallel.dp &&
         a.parallel.vpp == b.parallel.vpp && a.parallel.sp == b.parallel.sp && a.schedule == b.schedule &&
         a.training.micro_batch == b.training.micro_batch && a.training.recompute == b.training.recompute &&
         a.training.recompute_layers == b.training.recompute_layers &&
         a.parallel.zero == b.parallel.zero && a.parallel.ep == b.parallel.ep && a.parallel.cp == b.parallel.cp &&
         a.parallel.tp_overlap == b.parallel.tp_overlap &&
         a.parallel.param_gather_overlap == b.parallel.param_gather_overlap &&
         a.parallel.reshard_after_forward == b.parallel.reshard_after_forward &&
         a.parallel.defer_gradient_sync == b.parallel.defer_gradient_sync &&
         a.parallel.pp_overlap == b.parallel.pp_overlap && a.training.precision == b.training.precision &&
         a.parallel.etp() == b.parallel.etp() && a.parallel.stage_layers == b.parallel.stage_layers &&
         a.parallel.pairs_units(scenario::schedule_def(a.schedule).pairs_by_default) ==
             b.parallel.pairs_units(scenario::schedule_def(b.schedule).pairs_by_default);
}

// The scenario moved to `devices` devices: its own plan (tp, pp, cp, ep, schedule...) with dp scaled to the new count
// when that plan can run there; otherwise a plain data-parallel plan, which only seeds the search (the plans are
// enumerated from the model, batch and device count, not from the base plan). Returns whether the scenario's plan
// carried over.
bool move_to_devices(scenario::ScenarioSpec& s, int64_t devices)
{
  const scenario::ScenarioSpec own = s;
  const auto& p = own.parallel;
  s.devices = devices;
  const int64_t model_ranks = p.tp * p.pp * p.cp;
  if (devices % model_ranks == 0) {
    s.parallel.dp = devices / model_ranks;
    if (scenario::check_plan(s).empty())
      return true;
  }
  s = own;
  s.devices = devices;
  s.parallel.tp = s.parallel.pp = s.parallel.vpp = s.parallel.cp = s.parallel.ep = 1;
  s.parallel.dp = devices;
  s.parallel.stage_layers.clear();
  s.schedule = scenario::kDefaultSchedule;
  scenario::check_plan(s);  // sets the microbatches where the batch divides; the search prunes what does not
  return false;
}

}  // namespace

int search(std::ostream& out, std::ostream& log, const SearchOptions& o)
{
  // The scenario is checked as it is written (with --set), whatever --devices says.
  auto base = load_for_simulation(o.scenario, o.sets);
  const std::string why_not = systems::system_kind(base).why_no_plan_search();
  if (!why_not.empty()) {
    Diagnostics diag;  // (a ConfigError built from a braced list trips GCC 12's -Wmaybe-uninitialized)
    diag.add({o.scenario, 0, 0}, "hardware", why_not);
    diag.throw_if_any();
  }
  const int64_t scenario_devices = base.devices;
  const std::string written_plan = parallel::describe_plan(base);
  bool own_plan_carried = true;
  if (o.devices > 0 && o.devices != base.devices)
    own_plan_carried = move_to_devices(base, o.devices);
  const auto t0 = std::chrono::steady_clock::now();
  const double cpu_start = cpu_seconds();
  SearchPlans plans(base);
  const auto space = parallel::enumerate_plans(base,
                                               o.narrow       ? parallel::PlanDimensions{}
                                               : o.full_space ? parallel::PlanDimensions::full(base)
                                                              : parallel::PlanDimensions::wide(base),
                                               [&plans](const scenario::ScenarioSpec& plan) { plans.add(plan); });
  release_free_memory();
  // Under mpirun the ranks share the plans; rank 0 alone prints.
  const MpiWorld world = mpi_world();
  const bool quiet = o.quiet || !world.root();
  const size_t n = plans.size();
  // Plans whose replays read the same inputs (search_replay_key.hpp): one is simulated, the others take its step.
  const double cpu_enumerated = cpu_seconds();
  const ReplayKeys keys(plans);
  const double cpu_keyed = cpu_seconds();
  // Each plan's proven lower bound on its step time, and the order of simulation: the scenario's own plan first
  // (its rank is reported), then by bound, so that the k-th best step time falls early and prunes the rest. The
  // bounds are computed in child processes, --jobs at a time (search_bounds.hpp); every rank has the same bounds and
  // order.
  PlanBounds bounds;
  if (o.exhaustive) {
    bounds.bound.assign(n, 0.0);
    bounds.failed.assign(n, 0);
  } else {
    bounds = plan_bounds(plans, keys, o.jobs);
  }
  const double cpu_bounded = cpu_seconds();
  const std::vector<double>& bound = bounds.bound;
  const std::vector<char>& failed = bounds.failed;
  const std::map<std::string, int64_t>& failures = bounds.failures;
  const std::string& first_failed_plan = bounds.first_failed_plan;
  size_t own_index = n;
  for (size_t i = 0; i < n && own_plan_carried && own_index == n; ++i)
    if (same_plan(plans.plan_only(i), base))
      own_index = i;
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if ((a == own_index) != (b == own_index))
      return a == own_index;
    return bound[a] < bound[b];
  });
  if (!quiet) {
    log << "search: " << space.candidates << " plans, " << space.invalid << " do not divide, " << space.not_fitting
        << " do not fit, simulating up to " << n << " with " << o.jobs << " processes";
    if (!o.exhaustive)
      log << ", in the order of their lower bounds, until none left can enter the top " << o.top;
    if (world.size > 1)
      log << " on each of " << world.size << " MPI ranks (the progress counts rank 0's share)";
    log << "\n" << std::flush;
  }
  // In batches of a fixed size, so that which plans are simulated depends neither on --jobs nor on the MPI ranks:
  // after each batch the top-th best step time so far prunes every plan whose bound exceeds it.
  constexpr size_t kBatch = 16;
  const size_t k = size_t(std::max(1, o.top));
  std::vector<std::optional<Bytes>> results(n);
  // Per replay class, its plan simulated (n: none yet); per plan given another's step, that plan (n: none).
  std::vector<size_t> simulated_for(keys.replay_classes(), n), step_of(n, n);
  std::vector<double> steps;  // step times known (rank 0): simulated, or of an identical replay
  double kth_best = std::numeric_limits<double>::infinity();
  int64_t pruned_by_bound = 0;
  std::vector<double> pruned_bounds;  // of the plans not simulated
  Progress progress(log, quiet, n, 0, "search", "plans");
  for (size_t next = 0; next < n;) {
    std::vector<size_t> batch, shared;  // to simulate; given the step of one simulated (before or in this batch)
    for (; next < n && batch.size() < kBatch; ++next) {
      const size_t i = order[next];
      if (failed[i])
        continue;
      if (!o.exhaustive && i != own_index && bound[i] > kth_best) {
        ++pruned_by_bound;
        pruned_bounds.push_back(bound[i]);
        continue;
      }
      size_t& simulated = simulated_for[keys.replay_class(i)];
      if (simulated == n) {
        simulated = i;
        batch.push_back(i);
      } else {
        step_of[i] = simulated;
        shared.push_back(i);
      }
    }
    std::vector<std::function<Bytes()>> work;
    for (size_t i : batch)
      work.push_back(
          [&plans, i]() { return report::record_to_cbor(report::make_record(simulate(plans.at(i), false))); });
    const size_t handled = next - batch.size();
    auto got = run_across_ranks(work, o.jobs, [&](size_t done) { progress.update(handled + done); });
    progress.update(next);
    double kth = kth_best;
    if (world.root()) {
      for (size_t j = 0; j < batch.size(); ++j) {
        if (!got[j])
          continue;
        const json run = report::record_from_cbor(*got[j]).document;
        if (run.contains("step_time_s") && run["step_time_s"].get<double>() > 0)
          steps.push_back(run["step_time_s"].get<double>());
        results[batch[j]] = std::move(got[j]);
      }
      for (size_t i : shared) {
        const auto& from = results[step_of[i]];
        if (!from)
          continue;
        const json run = report::record_from_cbor(*from).document;
        if (run.contains("step_time_s") && run["step_time_s"].get<double>() > 0)
          steps.push_back(run["step_time_s"].get<double>());
      }
      if (steps.size() >= k) {
        std::nth_element(steps.begin(), steps.begin() + std::ptrdiff_t(k - 1), steps.end());
        kth = steps[k - 1];
      }
    }
    if (world.size > 1) {  // rank 0's k-th best to every rank, bit for bit
      uint64_t bits = 0;
      std::memcpy(&bits, &kth, sizeof bits);
      bits = (*broadcast_from_root(std::vector<uint64_t>{bits}))[0];
      std::memcpy(&kth, &bits, sizeof kth);
    }
    kth_best = kth;
  }
  progress.finish();
  if (!quiet) {
    char cpu[200];
    std::snprintf(cpu, sizeof cpu,
                  "search: CPU (user + system, this process and its children): enumeration %.1f s, replay keys %.1f s, "
                  "bounds %.1f s, simulations %.1f s\n",
                  cpu_enumerated - cpu_start, cpu_keyed - cpu_enumerated, cpu_bounded - cpu_keyed,
                  cpu_seconds() - cpu_bounded);
    log << cpu << std::flush;
  }
  if (!world.root())
    return 0;
  std::vector<Ranked> ranked;
  double activities = 0;  // SimGrid activities of every simulated plan, for dtsim bench
  int64_t simulated = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const size_t from = step_of[i] == n ? i : step_of[i];
    if (!results[from])
      continue;
    const json run = report::record_from_cbor(*results[from]).document;
    if (!run.contains("step_time_s") || run["step_time_s"].get<double>() <= 0)  // not simulated
      continue;
    if (from == i) {
      activities += run["simulation"]["activities"].get<double>();
      ++simulated;
    }
    // An identical replay's step, samples per second and MFU (the same step, batch, model FLOPs and devices); the
    // plan's own memory (the schedules it differs in hold different microbatches in flight).
    const double peak_mem = from == i ? run["memory"]["peak_bytes_per_device"].get<double>()
                                      : check_fit(plans.at(i)).memory.peak_bytes();
    ranked.push_back({i, run["step_time_s"].get<double>(), run["samples_per_s"].get<double>(),
                      run["mfu"].get<double>(), peak_mem});
  }
  // Step time, then the plan's description, so that ties come out in the same order every time.
  std::sort(ranked.begin(), ranked.end(), [&](const Ranked& a, const Ranked& b) {
    if (a.step != b.step)
      return a.step < b.step;
    return parallel::describe_plan(plans.plan_only(a.index)) < parallel::describe_plan(plans.plan_only(b.index));
  });
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int own = -1;
  for (size_t i = 0; i < ranked.size() && own_plan_carried; ++i)
    if (same_plan(plans.plan_only(ranked[i].index), base))
      own = int(i);
  // A simulated plan's rank among every plan that fits: exact when no plan left unsimulated could be faster (none
  // has a bound at or below its step time), else a range up to the case where all those are. The top --top are
  // exact by construction; a slower plan simulated on the way (the scenario's own, a batch's last) may not be.
  std::sort(pruned_bounds.begin(), pruned_bounds.end());
  auto rank_to = [&](size_t i) {
    const auto faster = std::upper_bound(pruned_bounds.begin(), pruned_bounds.end(), ranked[i].step);
    return int64_t(i) + 1 + int64_t(faster - pruned_bounds.begin());
  };
  auto rank_text = [&](size_t i) {
    const int64_t to = rank_to(i);
    return to == int64_t(i) + 1 ? std::to_string(i + 1) : std::to_string(i + 1) + " to " + std::to_string(to);
  };
  const int64_t own_rank_to = own >= 0 ? rank_to(size_t(own)) : 0;
  const size_t fitting = ranked.size() + size_t(pruned_by_bound);

  json j = report::scenario_identity_json(base);
  j["plans"] = {{"candidates", space.candidates}, {"invalid", space.invalid}, {"not_fitting", space.not_fitting},
                {"pruned_by_bound", pruned_by_bound}, {"simulated", simulated},
                {"same_replay_as_a_simulated_plan", int64_t(ranked.size()) - simulated},
                {"activities", int64_t(activities)}};
  if (!failures.empty()) {
    j["plans"]["internal_errors"] = json::object();
    for (const auto& [message, count] : failures)
      j["plans"]["internal_errors"][message] = count;
    j["plans"]["first_internal_error_plan"] = first_failed_plan;
  }
  j["pruned"] = json::object();
  for (const auto& [reason, n] : space.pruned)
    j["pruned"][reason] = n;
  j["ranking"] = json::array();
  for (size_t i = 0; i < ranked.size(); ++i) {
    const auto& r = ranked[i];
    json row = {{"rank", i + 1}};
    if (rank_to(i) > int64_t(i) + 1)
      row["rank_range"] = {i + 1, rank_to(i)};  // plans not simulated might be faster
    row["plan"] = parallel::describe_plan(plans.plan_only(r.index));
    row["step_time_s"] = r.step;
    row["step_time_lower_bound_s"] = bound[r.index];
    row["samples_per_s"] = r.samples;
    row["mfu"] = r.mfu;
    row["memory_peak_bytes_per_device"] = r.peak_mem;
    j["ranking"].push_back(row);
  }
  j["scenario_plan"] = own_plan_carried ? parallel::describe_plan(base) : written_plan;
  if (own >= 0) {
    if (own_rank_to == own + 1)
      j["scenario_plan_rank"] = own + 1;
    else
      j["scenario_plan_rank_range"] = {own + 1, own_rank_to};
    j["scenario_plan_vs_best"] = ranked[size_t(own)].step / ranked.front().step;
  }
  // Nothing to rank: exit 3 (does not fit) only where some plan was refused for memory; where every plan fails to
  // divide the devices or the batch, the input itself admits no plan (exit 2, as other bad input).
  const int none_ranked_code = space.not_fitting > 0 ? 3 : 2;
  if (o.format == "json") {
    out << j.dump(2) << "\n";
    return ranked.empty() ? none_ranked_code : 0;
  }
  char line[640];
  out << "dtsim " << kVersion << " search: " << base.model.name << " on " << base.devices << " x "
      << base.hardware.device.name << ", global batch " << base.training.global_batch << " x "
      << base.training.seq_len << "\n\n";
  std::snprintf(line, sizeof line,
                "  %lld plans looked at, %lld do not divide, %lld do not fit, %lld pruned by bound, %lld simulated "
                "(%lld more given the step of an identical replay) in %.1f s\n",
                (long long)space.candidates, (long long)space.invalid, (long long)space.not_fitting,
                (long long)pruned_by_bound, (long long)simulated, (long long)(int64_t(ranked.size()) - simulated),
                wall);
  out << line;
  for (const auto& [reason, n] : space.pruned) {
    std::snprintf(line, sizeof line, "    %6lld  %s\n", (long long)n, reason.c_str());
    out << line;
  }
  for (const auto& [message, count] : failures) {
    std::snprintf(line, sizeof line, "    %6lld  internal error, not simulated: %s (the first: %s)\n", (long long)count,
                  message.c_str(), first_failed_plan.c_str());
    out << line;
  }
  if (pruned_by_bound > 0) {
    std::snprintf(line, sizeof line, "    %6lld  lower bound on the step time above the %d%s best simulated\n",
                  (long long)pruned_by_bound, o.top, o.top == 1 ? "st" : o.top == 2 ? "nd" : o.top == 3 ? "rd" : "th");
    out << line;
  }
  if (ranked.empty()) {
    out << (none_ranked_code == 3 ? "\nNo plan fits.\n"
                                  : "\nNo plan divides " + std::to_string(base.devices) +
                                        " devices and the global batch " + std::to_string(base.training.global_batch) +
                                        ": nothing to simulate.\n");
    return none_ranked_code;
  }
  out << "\n  rank  step (s)  samples/s    MFU  memory/device  plan\n";
  auto print_row = [&](size_t i) {
    const auto& r = ranked[i];
    std::snprintf(line, sizeof line, "  %4s  %#8.4g  %9.2f  %4.1f%%  %9.1f GiB  %s\n", rank_text(i).c_str(), r.step,
                  r.samples, 100 * r.mfu, r.peak_mem / 1073741824.0,
                  parallel::describe_plan(plans.plan_only(r.index)).c_str());
    out << line;
  };
  for (size_t i = 0; i < ranked.size() && int(i) < o.top; ++i)
    print_row(i);
  if (ranked.size() > size_t(o.top)) {
    out << (pruned_by_bound > 0 ? "  ...   (below: the slowest plan simulated)\n" : "  ...\n");
    print_row(ranked.size() - 1);
  }
  if (!own_plan_carried) {
    out << "\n  this scenario's plan: " << written_plan << " on " << scenario_devices
        << " devices, which cannot run on " << base.devices << " devices\n";
    return 0;
  }
  out << "\n  this scenario's plan: " << parallel::describe_plan(base);
  if (own >= 0) {
    std::snprintf(line, sizeof line, ", rank %s of %zu, %.2fx the best step time\n", rank_text(size_t(own)).c_str(),
                  fitting, ranked[size_t(own)].step / ranked.front().step);
    out << line;
  } else {
    out << " (not among the plans searched, or it does not fit)\n";
  }
  return 0;
}

}  // namespace dtsim::app
