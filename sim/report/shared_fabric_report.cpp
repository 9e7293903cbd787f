#include "report/shared_fabric_report.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <ostream>

#include <nlohmann/json.hpp>

#include "core/format_number.hpp"
#include "core/version.hpp"
#include "report/system_sections.hpp"

namespace dtsim::report {

using json = nlohmann::ordered_json;

double SharedJobReport::shared_s() const
{
  return shared_steps_s.empty() ? 0.0
                                : std::accumulate(shared_steps_s.begin(), shared_steps_s.end(), 0.0) /
                                      double(shared_steps_s.size());
}

namespace {

// "0-7" for consecutive nodes; "0, 2, 4, ..., 14" otherwise.
std::string describe_nodes(const std::vector<int64_t>& nodes)
{
  if (nodes.empty())
    return "";
  if (nodes.back() - nodes.front() + 1 == int64_t(nodes.size()))
    return nodes.size() == 1 ? std::to_string(nodes.front())
                             : std::to_string(nodes.front()) + "-" + std::to_string(nodes.back());
  std::string out;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes.size() > 5 && i == 3) {
      out += ", ...";
      i = nodes.size() - 1;
    }
    out += (out.empty() ? "" : ", ") + std::to_string(nodes[i]);
  }
  return out;
}

const char* topology_name(hardware::Topology t)
{
  return t == hardware::Topology::RailOptimized ? "rail-optimized" : "fat tree";
}

}  // namespace

void print_shared_table(std::ostream& out, const SharedFabricReport& r)
{
  const auto& hw = r.jobs.front().spec->hardware;
  char line[512];
  auto row = [&](const std::string& k, const std::string& v) {
    std::snprintf(line, sizeof line, "  %-28s %s\n", k.c_str(), v.c_str());
    out << line;
  };
  out << "dtsim " << kVersion << ": " << r.jobs.size() << " jobs on one fabric\n";
  const std::string domains = hw.scale_up.from_section ? std::to_string(r.cluster_nodes) + " scale-up domains of " +
                                                             std::to_string(hw.scale_up.nodes) + " nodes, "
                                                       : "";
  row("cluster", domains + std::to_string(r.cluster_nodes * hw.scale_up.nodes) + " nodes of " +
                     std::to_string(hw.node.devices) + " x " + hw.device.name + " (" + hw.name + ")");
  row("fabric", std::string(topology_name(hw.network.topology)) + ", " + std::to_string(hw.network.levels) +
                    " levels of " + std::to_string(hw.network.switch_radix) + "-port switches, " +
                    std::to_string(hw.network.nics_per_node) + " NICs per node, uplinks " +
                    format_number("%g:1", hw.network.oversubscription) + " oversubscribed");
  row("placement", r.placement + (r.placement == "packed" ? " (each job on consecutive nodes)"
                                                          : " (nodes dealt to the jobs in turn)"));
  const bool staggered = std::any_of(r.start_s.begin(), r.start_s.end(), [](double t) { return t > 0; });
  row("shared steps", "every job runs steps back to back until all have run " + std::to_string(r.min_steps) +
                          "; shared = mean of a job's steps that " +
                          (staggered ? "started once all had started and " : "") + "ended while all ran");
  if (staggered) {
    std::string starts;
    for (double t : r.start_s)
      starts += (starts.empty() ? "" : ", ") + format_number("%.4f s", t);
    row("staggered starts", starts + " (job j starts j / n of its own step late)");
  }
  for (size_t i = 0; i < r.jobs.size(); ++i) {
    const auto& j = r.jobs[i];
    out << "\nJob " << i + 1 << ": " << j.spec->file << "\n";
    row("plan", j.summary);
    row("nodes", describe_nodes(j.nodes) + " (" + std::to_string(j.nodes.size()) + " nodes, " +
                     std::to_string(j.leaves) + " leaf switches, " + std::to_string(j.leaves_shared) +
                     " shared with other jobs)");
    std::snprintf(line, sizeof line, "  %-28s %12s %12s %9s\n", "", "alone", "shared", "change");
    out << line;
    auto compare = [&](const char* k, double a, double s) {
      std::snprintf(line, sizeof line, "  %-28s %10.4f s %10.4f s %9s\n", k, a, s,
                    a > 0 ? format_number("%+.1f%%", 100 * (s / a - 1)).c_str() : "");
      out << line;
    };
    compare("step time", j.alone_s, j.shared_s());
    compare("compute", j.alone.compute_s, j.shared.compute_s);
    compare("exposed TP communication", j.alone.exposed_tp_comm_s, j.shared.exposed_tp_comm_s);
    compare("exposed pipeline transfers", j.alone.exposed_pp_comm_s, j.shared.exposed_pp_comm_s);
    compare("exposed data-parallel comm.", j.alone.exposed_dp_comm_s, j.shared.exposed_dp_comm_s);
    if (j.spec->parallel.ep > 1)
      compare("exposed expert all-to-all", j.alone.exposed_ep_comm_s, j.shared.exposed_ep_comm_s);
    if (j.spec->parallel.cp > 1)
      compare("exposed context-parallel ring", j.alone.exposed_cp_comm_s, j.shared.exposed_cp_comm_s);
    compare("pipeline bubble / idle", j.alone.bubble_s, j.shared.bubble_s);
    compare("optimizer", j.alone.optimizer_s, j.shared.optimizer_s);
    const auto [lo, hi] = std::minmax_element(j.shared_steps_s.begin(), j.shared_steps_s.end());
    row("shared steps", std::to_string(j.shared_steps_s.size()) + " of " + std::to_string(j.steps_run) + " run, " +
                            format_number("%.4f", *lo) + " to " + format_number("%.4f s", *hi));
  }
}

void print_shared_json(std::ostream& out, const SharedFabricReport& r)
{
  const auto& hw = r.jobs.front().spec->hardware;
  json j;
  j["dtsim_version"] = kVersion;
  j["shared_fabric"] = {{"hardware", hw.name},
                        {"cluster_nodes", r.cluster_nodes * hw.scale_up.nodes},
                        {"devices_per_node", hw.node.devices},
                        {"oversubscription", hw.network.oversubscription},
                        {"placement", r.placement},
                        {"min_steps", r.min_steps}};
  json jobs = json::array();
  for (const auto& job : r.jobs)
    jobs.push_back({{"scenario", job.spec->file},
                    {"name", job.spec->name},
                    {"plan", job.summary},
                    {"devices", job.spec->devices},
                    {"nodes", job.nodes},
                    {"leaves", job.leaves},
                    {"leaves_shared", job.leaves_shared},
                    {"start_s", r.start_s.empty() ? 0.0 : r.start_s[size_t(&job - r.jobs.data())]},
                    {"alone", {{"step_time_s", job.alone_s}, {"breakdown", breakdown_json(job.alone, *job.sections)}}},
                    {"shared",
                     {{"step_time_s", job.shared_s()},
                      {"steps_s", job.shared_steps_s},
                      {"steps_run", job.steps_run},
                      {"breakdown", breakdown_json(job.shared, *job.sections)}}},
                    {"slowdown", job.alone_s > 0 ? job.shared_s() / job.alone_s - 1 : 0.0}});
  j["shared_fabric"]["jobs"] = jobs;
  out << j.dump(2) << "\n";
}

}  // namespace dtsim::report
