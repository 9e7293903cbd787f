#include "report/run_report.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <numeric>
#include <ostream>

#include <nlohmann/json.hpp>

#include "config/units.hpp"
#include "core/version.hpp"
#include "report/system_sections.hpp"
#include "report/time_to_train.hpp"

namespace dtsim::report {

using config::Dimension;
using config::format_quantity;
using json = nlohmann::ordered_json;

stack::StepInterval SystemSections::step_interval(const RunReport& r, double step_s) const
{
  return stack::step_interval(r.scenario->stack, step_s);
}

Derived derive(const RunReport& r)
{
  Derived d;
  const auto& s = *r.scenario;
  d.power_W = double(s.devices) * s.hardware.device_power_W();
  d.step = r.simulated ? r.replay.step_time_s : 0.0;
  if (d.step <= 0)
    return d;
  d.energy_J = d.power_W * d.step;
  const double devices = double(s.devices);
  const double peak = s.hardware.peak_flops(s.training.precision);
  d.samples_per_s = double(s.training.global_batch) / d.step;
  d.tokens_per_s = d.samples_per_s * double(s.training.seq_len);
  d.model_tflops = r.model_flops / d.step / devices / 1e12;
  d.hw_tflops = r.hardware_flops / d.step / devices / 1e12;
  d.mfu = d.model_tflops * 1e12 / peak;
  d.hfu = d.hw_tflops * 1e12 / peak;
  return d;
}

StepSpread step_spread(const RunReport& r)
{
  std::vector<double> x = r.replay.sample_steps;
  StepSpread s;
  if (!r.simulated || x.size() < 2)
    return s;
  std::sort(x.begin(), x.end());
  auto at = [&](double p) {
    const double pos = p * double(x.size() - 1);
    const size_t i = size_t(pos);
    const double f = pos - double(i);
    return i + 1 < x.size() ? x[i] + f * (x[i + 1] - x[i]) : x[i];
  };
  s.known = true;
  s.p5 = at(0.05);
  s.p50 = at(0.50);
  s.p95 = at(0.95);
  return s;
}

void print_table(std::ostream& out, const RunReport& r)
{
  const auto& s = *r.scenario;
  Derived d = derive(r);
  char line[256];
  auto row = [&](const char* k, const std::string& v) {
    std::snprintf(line, sizeof line, "  %-28s %s\n", k, v.c_str());
    out << line;
  };
  auto num = [](const char* fmt, double v) {
    char b[64];
    std::snprintf(b, sizeof b, fmt, v);
    return std::string(b);
  };
  out << "dtsim " << kVersion << ": " << s.name << "\n";
  // 3.55M, 1.3B, 175B, 1.01T: three significant digits with the largest scale that leaves at least 1.
  const double params = r.total_params;
  const std::string params_text = params >= 1e12 ? num("%.3gT", params / 1e12)
                                  : params >= 1e9 ? num("%.3gB", params / 1e9)
                                  : params >= 1e6 ? num("%.3gM", params / 1e6)
                                                  : num("%.3gK", params / 1e3);
  row("model", s.model.name + " (" + params_text + " parameters)");
  row("hardware", s.hardware.name);
  r.sections->placement_rows(r, row);
  row("batch", std::to_string(s.training.global_batch) + " x " + std::to_string(s.training.seq_len) +
                   " tokens, micro batch " + std::to_string(s.training.micro_batch) + ", " +
                   std::to_string(s.microbatches) + (s.microbatches == 1 ? " microbatch" : " microbatches") +
                   " per pipeline");
  if (s.training.micro_batch_auto)
    row("micro batch", std::to_string(s.training.micro_batch) + " (" + s.training.micro_batch_reason + ")");
  row("training", s.training.precision + ", recompute " + scenario::describe_recompute(s.training));
  r.sections->software_rows(r, row);
  r.sections->memory_section(out, r, row);
  if (!r.simulated) {
    out << "\nNot simulated: the plan does not fit in memory (" << r.why_not_fitting << ").\n";
    return;
  }
  out << "\nStep\n";
  row("step time", num("%.4f s", d.step));
  r.sections->step_rows(r, d.step, row);
  if (const StepSpread sp = step_spread(r); sp.known)
    row("  sampled steps", num("mean of %.0f", double(r.replay.sample_steps.size())) +
                               num(", p5 %.4f", sp.p5) + num(" / p50 %.4f", sp.p50) + num(" / p95 %.4f s", sp.p95) +
                               num(" (seed %.0f)", double(s.variability.seed)));
  row("throughput", num("%.2f samples/s", d.samples_per_s) + ", " + num("%.0f tokens/s", d.tokens_per_s));
  row("model TFLOP/s per device", num("%.1f", d.model_tflops) + num("  (MFU %.1f%%)", 100 * d.mfu));
  row("hardware TFLOP/s per device", num("%.1f", d.hw_tflops) + num("  (HFU %.1f%%)", 100 * d.hfu));
  out << "\nWhere the time goes (mean over simulated devices)\n";
  const auto& b = r.replay.average;
  auto part = [&](const char* k, double v) { row(k, num("%.4f s", v) + num("  %5.1f%%", 100 * v / d.step)); };
  part("compute", b.compute_s);
  part("  of which recomputation", b.recompute_s);
  part("exposed TP communication", b.exposed_tp_comm_s);
  part(r.sections->pp_label(), b.exposed_pp_comm_s);
  part(r.sections->dp_label(), b.exposed_dp_comm_s);
  if (s.parallel.ep > 1)
    part("exposed expert all-to-all", b.exposed_ep_comm_s);
  if (s.parallel.cp > 1)
    part("exposed context-parallel ring", b.exposed_cp_comm_s);
  part("pipeline bubble / idle", b.bubble_s);
  part("optimizer", b.optimizer_s);
  if (b.stack_overhead_s > 0)
    part("stack overhead per step", b.stack_overhead_s);
  if (b.straggler_s > 0)
    part("waiting for slower devices", b.straggler_s);
  r.sections->extra_parts(b, part);
  if (d.power_W > 0)
    row("power, energy per step", format_quantity(d.power_W, Dimension::Power) + num(", %.3g kWh", d.energy_J / 3.6e6));
  if (s.training.tokens > 0) {
    const TimeToTrain t = time_to_train(s, d.step, r.total_params, r.sections->failure_assumptions(r));
    out << "\nTime to train " << format_quantity(t.tokens, Dimension::Count) << " tokens (" << t.steps << " steps)\n";
    if (!t.why_not.empty()) {
      row("time to train", "never: " + t.why_not);
    } else {
      row("time to train", num("%.1f days", t.wall_s / 86400) + num("  (goodput %.1f%%", 100 * t.goodput) +
                               num(", %.0f failures expected)", t.expected_failures));
      row("  steps alone", num("%.1f days", t.compute_s / 86400));
      row("  checkpoint writes", num("%.2f days", t.checkpoint_stall_s / 86400) +
                                     num(" (every %.3g min, ", t.checkpoint_interval_s / 60) +
                                     num("%.3g s each, ", t.checkpoint_write_s) +
                                     (t.checkpoint_async ? "async, " : "sync, ") + t.checkpoint_interval_basis + ")");
      row("  restarts", num("%.2f days", t.restarts_s / 86400));
      row("  work lost to failures", num("%.2f days", t.lost_work_s / 86400) +
                                         num(" (the job fails every %.3g h)", t.mtbf_s / 3600));
    }
    row("  failures and checkpoints", t.basis);
  }
  out << "\n";
  row("simulated", std::to_string(r.replay.simulated_devices) + " devices (" + scenario::to_string(s.fidelity) +
                       "), " + std::to_string(r.replay.activities) + " activities\n");
  if (!r.replay.folding_note.empty())
    out << "  note: " << r.replay.folding_note << "\n";
}

// Perfetto draws the slices of one track as a stack: each must lie inside the one below it or after it. Slices that
// partly overlap (gradient sets of several units on their way out, optimizer updates sharing MemoryX) are put on
// extra lanes of their track. Returns each event's lane, 0 for every event that nests or follows on its own track.
std::vector<int> trace_lanes(const std::vector<replay::TraceEvent>& events)
{
  std::vector<size_t> order(events.size());
  std::iota(order.begin(), order.end(), size_t(0));
  // By track, then by start, the longer first, so that an enclosing slice comes before those inside it.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto &x = events[a], &y = events[b];
    if (x.device != y.device || x.track != y.track)
      return x.device != y.device ? x.device < y.device : x.track < y.track;
    return x.start != y.start ? x.start < y.start : x.end > y.end;
  });
  std::vector<int> lane(events.size(), 0);
  std::vector<std::vector<double>> open;  // per lane, the ends of the slices still open, innermost last
  for (size_t k = 0; k < order.size(); ++k) {
    const replay::TraceEvent& e = events[order[k]];
    if (k == 0 || e.device != events[order[k - 1]].device || e.track != events[order[k - 1]].track)
      open.clear();
    size_t l = 0;
    for (; l < open.size(); ++l) {
      auto& ends = open[l];
      while (!ends.empty() && ends.back() <= e.start)
        ends.pop_back();
      if (ends.empty() || e.end <= ends.back())
        break;
    }
    if (l == open.size())
      open.emplace_back();
    open[l].push_back(e.end);
    lane[order[k]] = int(l);
  }
  return lane;
}

void write_trace(std::ostream& out, const RunReport& r)
{
  const auto& trace = r.replay.trace;
  // Lane l of track t is thread 4 * l + t: the four tracks keep their numbers, extra lanes come after them.
  const std::vector<int> lanes = trace_lanes(trace);
  std::map<int64_t, std::array<int, 4>> lanes_of;  // per device, the lanes of each track
  for (size_t i = 0; i < trace.size(); ++i) {
    auto& n = lanes_of[trace[i].device];  // value-initialised: {0, 0, 0, 0}
    n[size_t(trace[i].track)] = std::max(n[size_t(trace[i].track)], lanes[i] + 1);
  }
  json events = json::array();
  for (const auto& [d, n] : lanes_of) {
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", d}, {"args", {{"name", r.sections->process_name(r, d)}}}});
    for (int t = 0; t < 4; ++t)
      events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", d}, {"tid", t}, {"args", {{"name", r.sections->track_name(t)}}}});
    for (int t = 0; t < 4; ++t)
      for (int l = 1; l < n[size_t(t)]; ++l)
        events.push_back({{"name", "thread_name"},
                          {"ph", "M"},
                          {"pid", d},
                          {"tid", 4 * l + t},
                          {"args", {{"name", std::string(r.sections->track_name(t)) + " (" + std::to_string(l + 1) + ")"}}}});
  }
  for (size_t i = 0; i < trace.size(); ++i) {
    const auto& e = trace[i];
    events.push_back({{"name", e.name},
                      {"cat", r.sections->track_name(e.track)},
                      {"ph", "X"},
                      {"ts", e.start * 1e6},
                      {"dur", (e.end - e.start) * 1e6},
                      {"pid", e.device},
                      {"tid", 4 * lanes[i] + e.track}});
  }
  out << json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() << "\n";
}

}  // namespace dtsim::report
