#include "app/shared_fabric.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <ostream>
#include <set>

#include "core/child_process.hpp"
#include "app/load.hpp"
#include "app/simulate.hpp"
#include "systems/system_kinds.hpp"
#include "core/diagnostics.hpp"
#include "platform/fabric_layout.hpp"
#include "report/shared_fabric_report.hpp"

namespace dtsim::app {

namespace {

using scenario::ScenarioSpec;

// The first key of the cluster description on which `b` differs from `a`, with b's value and a's; empty when they
// describe the same cluster (jobs on one fabric must).
std::string cluster_difference(const hardware::HardwareSpec& a, const hardware::HardwareSpec& b)
{
  auto text = [](double v) {
    char s[32];
    std::snprintf(s, sizeof s, "%g", v);
    return std::string(s);
  };
  const std::vector<std::tuple<const char*, std::string, std::string>> keys{
      {"device.name", a.device.name, b.device.name},
      {"node.devices", text(a.node.devices), text(b.node.devices)},
      {"scale_up.nodes", text(a.scale_up.nodes), text(b.scale_up.nodes)},
      {"NVLink", text(a.scale_up.nvlink.goodput_Bps), text(b.scale_up.nvlink.goodput_Bps)},
      {"network.nics_per_node", text(a.network.nics_per_node), text(b.network.nics_per_node)},
      {"network.nic bandwidth", text(a.network.nic.goodput_Bps), text(b.network.nic.goodput_Bps)},
      {"network.nic latency", text(a.network.nic.latency_s), text(b.network.nic.latency_s)},
      {"network.topology.type", text(double(int(a.network.topology))), text(double(int(b.network.topology)))},
      {"network.topology.levels", text(a.network.levels), text(b.network.levels)},
      {"network.topology.switch_radix", text(a.network.switch_radix), text(b.network.switch_radix)},
      {"network.topology.oversubscription", text(a.network.oversubscription), text(b.network.oversubscription)}};
  for (const auto& [key, x, y] : keys)
    if (x != y)
      return std::string(key) + " is " + y + ", not " + x;
  return "";
}

// The hardware as its file describes it: a job's `placement.segment` makes its scale-up domains the segment's size
// (scenario/job_segment.hpp), which is a choice of the job, not a difference of the cluster.
hardware::HardwareSpec as_described(const ScenarioSpec& s)
{
  hardware::HardwareSpec hw = s.hardware;
  if (s.placement.segment > 0)
    hw.scale_up.nodes = int(s.placement.domain_nodes);
  return hw;
}

// "16 nodes (placement.segment)" or "18 nodes (the whole domain)": the domains a job is laid out on.
std::string job_domain(const ScenarioSpec& s)
{
  return std::to_string(s.hardware.scale_up.nodes) + " nodes (" +
         (s.placement.segment > 0 ? "placement.segment" : "the whole domain") + ")";
}

struct Jobs {
  std::vector<ScenarioSpec> specs;
  std::vector<parallel::Placement> placements;  ///< on the cluster's domains
  int64_t cluster_nodes = 0;  ///< scale-up domains of the cluster (nodes on DGX-style hardware)
};

// Loads and checks the jobs and lays them out on the cluster.
Jobs load_jobs(const SharedFabricOptions& o)
{
  Jobs jobs;
  Diagnostics diag;
  for (const auto& path : o.scenarios)
    jobs.specs.push_back(load_for_simulation(path, o.sets));
  const auto& first = jobs.specs.front();
  for (const auto& s : jobs.specs) {
    const Origin at = s.where.count("hardware") ? s.where.at("hardware") : Origin{s.file, 0, 0};
    if (s.variability.on() || s.variability.samples > 1)
      diag.add(s.where.count("variability") ? s.where.at("variability") : Origin{s.file, 0, 0}, "variability",
               "expected no variability on a shared fabric: a job's steps there are its steps one after the other, "
               "not samples (docs/variability.md); run the job alone with --samples");
    const std::string why_not = systems::system_kind(s).why_no_shared_fabric(s);
    if (!why_not.empty()) {
      diag.add(at, "hardware", why_not);
      continue;
    }
    if (&s == &first || !systems::system_kind(first).why_no_shared_fabric(first).empty())
      continue;
    const std::string why = cluster_difference(as_described(first), as_described(s));
    if (!why.empty()) {
      diag.add(at, "hardware", "expected the cluster of " + first.file + " (" + first.hardware.file +
                                   "): jobs on a shared fabric run on one cluster, got " + s.hardware.file +
                                   ", whose " + why);
      continue;
    }
    // The cluster is laid out in domains of one size, each job on whole domains of its own: every job must hold
    // the same part of each NVLink domain.
    if (s.hardware.scale_up.nodes != first.hardware.scale_up.nodes)
      diag.add(s.where.count("placement.segment") ? s.where.at("placement.segment") : at, "placement.segment",
               "expected domains of " + job_domain(first) + " as " + first.file +
                   " holds: jobs on a shared fabric are laid out on scale-up domains of one size, got " +
                   job_domain(s) + "; give every job the same placement.segment");
  }
  diag.throw_if_any();
  // Each job on whole scale-up domains of its own (nodes, or racks of nodes): consecutive (packed) or dealt in turn
  // (spread).
  const int64_t per_node = first.hardware.domain_devices();
  std::vector<int64_t> wanted;
  for (const auto& s : jobs.specs) {
    jobs.placements.emplace_back(s.parallel.dp_cp(), s.parallel.tp, s.parallel.pp, per_node);
    wanted.push_back(jobs.placements.back().domains());
  }
  std::vector<std::vector<int64_t>> nodes(jobs.specs.size());
  int64_t next = 0;
  if (o.placement == "spread") {
    for (bool more = true; more;) {
      more = false;
      for (size_t j = 0; j < nodes.size(); ++j)
        if (int64_t(nodes[j].size()) < wanted[j]) {
          nodes[j].push_back(next++);
          more = true;
        }
    }
  } else {
    for (size_t j = 0; j < nodes.size(); ++j)
      for (int64_t k = 0; k < wanted[j]; ++k)
        nodes[j].push_back(next++);
  }
  jobs.cluster_nodes = next;
  for (size_t j = 0; j < nodes.size(); ++j)
    jobs.placements[j].place_on(nodes[j], next);
  return jobs;
}

// The cluster's nodes (hosts) the job's devices are on: those of each of its domains that it fills, in order.
std::vector<int64_t> nodes_of(const hardware::HardwareSpec& hw, const parallel::Placement& placement)
{
  std::vector<int64_t> nodes;
  const int64_t per_node = std::max(1, hw.node.devices);
  for (int64_t k = 0; k < placement.domains(); ++k) {
    const int64_t first_device = k * placement.devices_per_domain();
    const int64_t devices = std::min(placement.devices_per_domain(), placement.devices() - first_device);
    for (int64_t n = 0; n < (devices + per_node - 1) / per_node; ++n)
      nodes.push_back(placement.domain_of(first_device) * hw.scale_up.nodes + n);
  }
  return nodes;
}

// A plan that does not fit: which job, and why (exit 3).
int check_fits(const Jobs& jobs, std::ostream& err)
{
  int code = 0;
  for (size_t j = 0; j < jobs.specs.size(); ++j) {
    const auto fit = check_fit(jobs.specs[j]);
    if (!fit.why_not_fitting.empty()) {
      err << "dtsim: job " << j + 1 << " (" << jobs.specs[j].file
          << "): the plan does not fit in memory: " << fit.why_not_fitting << "\n";
      code = 3;
    }
  }
  return code;
}

constexpr size_t kBreakdownTermCount = std::size(replay::kBreakdownTerms);

void put(std::vector<double>& v, const replay::Breakdown& b)
{
  for (double replay::Breakdown::*term : replay::kBreakdownTerms)
    v.push_back(b.*term);
}

replay::Breakdown take(const std::vector<double>& v, size_t at)
{
  replay::Breakdown b;
  for (size_t k = 0; k < kBreakdownTermCount; ++k)
    b.*replay::kBreakdownTerms[k] = v.at(at + k);
  return b;
}

// In a child process: the replay of the jobs `which` together, by their kind of system; per job its steps run, its
// contended steps' count, their breakdown, then their times.
std::vector<double> replay_jobs(const Jobs& jobs, const std::vector<size_t>& which, int64_t min_steps,
                                const std::vector<double>& start_s = {})
{
  std::vector<systems::FabricJob> fabric_jobs;
  for (size_t j : which)
    fabric_jobs.push_back({&jobs.specs[j], jobs.placements[j], start_s.empty() ? 0.0 : start_s[j]});
  const auto& kind = systems::system_kind(jobs.specs[which.front()]);
  std::vector<double> v;
  for (const auto& r : kind.replay_shared_fabric(fabric_jobs, min_steps)) {
    v.push_back(double(r.steps_run));
    v.push_back(double(r.contended_s.size()));
    put(v, r.average);
    v.insert(v.end(), r.contended_s.begin(), r.contended_s.end());
  }
  return v;
}

// Leaf switches each job's NICs are on, and how many of them other jobs' NICs are on too.
void count_leaves(const Jobs& jobs, report::SharedFabricReport& r)
{
  std::vector<std::set<int64_t>> leaves(jobs.specs.size());
  std::map<int64_t, int64_t> jobs_on;
  for (size_t j = 0; j < jobs.specs.size(); ++j) {
    const platform::FabricLayout layout(jobs.specs[j].hardware, jobs.placements[j]);
    for (int64_t d = 0; d < jobs.placements[j].devices(); ++d)
      leaves[j].insert(layout.leaf_of_nic(layout.nic_index(d)));
    for (int64_t l : leaves[j])
      ++jobs_on[l];
  }
  for (size_t j = 0; j < jobs.specs.size(); ++j) {
    r.jobs[j].leaves = int64_t(leaves[j].size());
    for (int64_t l : leaves[j])
      r.jobs[j].leaves_shared += jobs_on[l] > 1 ? 1 : 0;
  }
}

}  // namespace

int validate_shared_fabric(std::ostream& out, std::ostream& err, const SharedFabricOptions& o)
{
  const Jobs jobs = load_jobs(o);
  if (const int code = check_fits(jobs, err); code != 0)
    return code;
  for (size_t j = 0; j < jobs.specs.size(); ++j)
    out << jobs.specs[j].file << ": ok (" << systems::system_kind(jobs.specs[j]).summary(jobs.specs[j]) << ")\n";
  out << jobs.specs.size() << " jobs on " << jobs.cluster_nodes * jobs.specs.front().hardware.scale_up.nodes
      << " nodes, placement " << o.placement << ": ok\n";
  return 0;
}

int run_shared_fabric(std::ostream& out, std::ostream& err, const SharedFabricOptions& o)
{
  const Jobs jobs = load_jobs(o);
  if (const int code = check_fits(jobs, err); code != 0)
    return code;
  const size_t n = jobs.specs.size();
  // Each job alone on its nodes (one step: alone, every step is alike), and all of them together; staggered, the
  // jobs together once their alone steps are known (job j starts j / n of its own step late).
  std::vector<std::function<std::vector<double>()>> work;
  for (size_t j = 0; j < n; ++j)
    work.push_back([&jobs, j]() { return replay_jobs(jobs, {j}, 1); });
  std::vector<size_t> all(n);
  for (size_t j = 0; j < n; ++j)
    all[j] = j;
  std::vector<double> start_s(n, 0.0);
  std::vector<std::optional<std::vector<double>>> results;
  if (o.stagger) {
    results = run_in_children(work, o.jobs);
    for (size_t j = 0; j < n; ++j)
      start_s[j] = results[j] ? double(j) / double(n) * results[j]->at(2 + kBreakdownTermCount) : 0.0;
    results.push_back(run_in_child([&]() { return replay_jobs(jobs, all, o.min_steps, start_s); }));
  } else {
    work.push_back([&]() { return replay_jobs(jobs, all, o.min_steps); });
    results = run_in_children(work, o.jobs);
  }
  for (const auto& res : results)
    if (!res)
      throw InternalError("a shared-fabric replay failed in its child process");

  report::SharedFabricReport r;
  r.placement = o.placement;
  r.start_s = start_s;
  r.cluster_nodes = jobs.cluster_nodes;
  r.min_steps = o.min_steps;
  r.jobs.resize(n);
  const auto& together = *results.back();
  size_t at = 0;
  for (size_t j = 0; j < n; ++j) {
    auto& job = r.jobs[j];
    job.spec = &jobs.specs[j];
    job.sections = &systems::system_kind(jobs.specs[j]).sections();
    job.summary = systems::system_kind(jobs.specs[j]).summary(jobs.specs[j]);
    job.nodes = nodes_of(jobs.specs[j].hardware, jobs.placements[j]);
    const auto& alone = *results[j];
    job.alone = take(alone, 2);
    job.alone_s = alone.at(2 + kBreakdownTermCount);
    job.steps_run = int64_t(together.at(at));
    const auto counted = size_t(together.at(at + 1));
    job.shared = take(together, at + 2);
    at += 2 + kBreakdownTermCount;
    job.shared_steps_s.assign(together.begin() + std::ptrdiff_t(at), together.begin() + std::ptrdiff_t(at + counted));
    at += counted;
  }
  count_leaves(jobs, r);
  if (o.format == "json")
    report::print_shared_json(out, r);
  else
    report::print_shared_table(out, r);
  return 0;
}

}  // namespace dtsim::app
