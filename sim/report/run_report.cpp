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
#include "stack/interval.hpp"

namespace dtsim::report {

using config::Dimension;
using config::format_quantity;
using json = nlohmann::ordered_json;

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

namespace {

json memory_json(const parallel::StageMemory& m)
{
  return json{{"stage", m.stage},
              {"params", m.params},
              {"weights_bytes", m.weights_bytes},
              {"gradients_bytes", m.gradients_bytes},
              {"optimizer_bytes", m.optimizer_bytes},
              {"activations_bytes", m.activations_bytes},
              {"microbatches_in_flight", m.microbatches_in_flight},
              {"total_bytes", m.total_bytes()}};
}

json breakdown_json(const replay::Breakdown& b, bool wafer)
{
  json j{{"compute_s", b.compute_s},
         {"recompute_s", b.recompute_s},
         {"exposed_tp_comm_s", b.exposed_tp_comm_s},
         {"exposed_pp_comm_s", b.exposed_pp_comm_s},
         {"exposed_dp_comm_s", b.exposed_dp_comm_s},
         {"exposed_ep_comm_s", b.exposed_ep_comm_s},
         {"exposed_cp_comm_s", b.exposed_cp_comm_s},
         {"bubble_s", b.bubble_s},
         {"optimizer_s", b.optimizer_s}};
  if (b.stack_overhead_s > 0)
    j["stack_overhead_s"] = b.stack_overhead_s;
  if (wafer) {
    j["exposed_weight_streaming_s"] = b.exposed_weight_streaming_s;
    j["exposed_fabric_s"] = b.exposed_fabric_s;
  }
  return j;
}

}  // namespace

void print_json(std::ostream& out, const RunReport& r)
{
  const auto& s = *r.scenario;
  Derived d = derive(r);
  json j;
  j["dtsim_version"] = kVersion;
  j["scenario"] = s.name;
  j["model"] = s.model.name;
  j["hardware"] = s.hardware.name;
  j["devices"] = s.devices;
  j["plan"] = {{"dp", s.parallel.dp},          {"tp", s.parallel.tp},
               {"pp", s.parallel.pp},          {"vpp", s.parallel.vpp},
               {"sp", s.parallel.sp},          {"zero", s.parallel.zero},
               {"ep", s.parallel.ep},          {"cp", s.parallel.cp},
               {"schedule", scenario::to_string(s.schedule)},
               {"micro_batch", s.training.micro_batch}, {"microbatches", s.microbatches},
               {"global_batch", s.training.global_batch}, {"seq_len", s.training.seq_len},
               {"precision", s.training.precision}, {"recompute", scenario::to_string(s.training.recompute)},
               {"fidelity", scenario::to_string(s.fidelity)}};
  if (s.training.recompute_layers > 0)
    j["plan"]["recompute_layers"] = s.training.recompute_layers;
  j["params"] = r.total_params;
  j["fits"] = r.fits();
  if (!r.fits())
    j["why_not_fitting"] = r.why_not_fitting;
  j["power_w"] = d.power_W;
  j["memory"] = {{"peak_bytes_per_device", r.memory.peak_bytes()},
                 {"capacity_bytes_per_device", r.memory.capacity_bytes},
                 {"peak_stage", r.memory.peak_stage},
                 {"stages", json::array()}};
  for (const auto& m : r.memory.stages)
    j["memory"]["stages"].push_back(memory_json(m));
  if (r.wafer) {
    const auto& w = r.wafer_memory;
    j["wafer"] = {{"mode", scenario::to_string(r.wafer_mode)},
                  {"mode_reason", r.wafer_mode_reason},
                  {"systems", s.parallel.dp},
                  {"sram_bytes", w.sram_total()},
                  {"sram_capacity_bytes", w.sram_capacity},
                  {"sram_weights_bytes", w.sram_weights},
                  {"sram_activations_bytes", w.sram_activations},
                  {"memoryx_bytes", w.memoryx_total()},
                  {"memoryx_capacity_bytes", w.memoryx_capacity},
                  {"passes_per_step", s.microbatches}};
  }
  if (s.stack.given())
    j["stack"] = {{"file", s.stack.file},
                  {"name", s.stack.name},
                  {"calibration_runs", s.stack.calibration.runs},
                  {"heldout_runs", s.stack.calibration.heldout_errors.size()}};
  if (r.simulated) {
    j["step_time_s"] = d.step;
    const auto iv = stack::step_interval(s.stack, d.step);
    j["step_time_interval_s"] = iv.known ? json::array({iv.low_s, iv.high_s}) : json(nullptr);
    j["step_time_interval_basis"] = iv.basis;
    j["samples_per_s"] = d.samples_per_s;
    j["tokens_per_s"] = d.tokens_per_s;
    j["model_tflops_per_device"] = d.model_tflops;
    j["hardware_tflops_per_device"] = d.hw_tflops;
    j["mfu"] = d.mfu;
    j["hfu"] = d.hfu;
    j["energy_per_step_j"] = d.energy_J;
    j["breakdown"] = breakdown_json(r.replay.average, r.wafer);
    j["breakdown_per_stage"] = json::array();
    for (const auto& b : r.replay.per_stage)
      j["breakdown_per_stage"].push_back(breakdown_json(b, r.wafer));
    j["simulation"] = {{"simulated_devices", r.replay.simulated_devices},
                       {"activities", r.replay.activities},
                       {"links", r.replay.links}};
  }
  out << j.dump(2) << "\n";
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
  if (r.wafer)
    row("systems", std::to_string(s.devices) + " x " + s.hardware.wafer.name +
                       (s.devices > 1 ? ", data parallel through SwarmX" : ""));
  else {
    const int64_t nodes = (s.devices + s.hardware.node.devices - 1) / s.hardware.node.devices;
    row("devices", std::to_string(s.devices) + " (" + std::to_string(nodes) + (nodes == 1 ? " node" : " nodes") +
                       " of " + std::to_string(s.hardware.node.devices) + ")");
  }
  if (r.wafer)
    row("execution", std::string(scenario::to_string(r.wafer_mode)) + " (" + r.wafer_mode_reason + ")");
  else
    row("plan", "dp " + std::to_string(s.parallel.dp) + ", tp " + std::to_string(s.parallel.tp) + ", pp " +
                  std::to_string(s.parallel.pp) + (s.parallel.vpp > 1 ? ", vpp " + std::to_string(s.parallel.vpp) : "") +
                  (s.parallel.sp ? ", sp" : "") +
                  (s.parallel.cp > 1 ? ", cp " + std::to_string(s.parallel.cp) : "") +
                  (s.parallel.ep > 1 ? ", ep " + std::to_string(s.parallel.ep) : "") +
                  (s.parallel.zero > 0 ? ", ZeRO-" + std::to_string(s.parallel.zero) : "") + ", " +
                  scenario::to_string(s.schedule));
  row("batch", std::to_string(s.training.global_batch) + " x " + std::to_string(s.training.seq_len) +
                   " tokens, micro batch " + std::to_string(s.training.micro_batch) + ", " +
                   std::to_string(s.microbatches) + (s.microbatches == 1 ? " microbatch" : " microbatches") + " per pipeline");
  row("training", s.training.precision + ", recompute " + scenario::describe_recompute(s.training));
  if (!r.wafer)
    row("software stack", s.stack.given() ? s.stack.name + " (" + s.stack.file + ")" : "none (no corrections)");
  if (r.wafer) {
    const auto& w = r.wafer_memory;
    out << "\nMemory\n";
    row("on-wafer SRAM", format_quantity(w.sram_total(), Dimension::Bytes) + " of " +
                             format_quantity(w.sram_capacity, Dimension::Bytes) + " (weights and states " +
                             format_quantity(w.sram_weights, Dimension::Bytes) + ", activations " +
                             format_quantity(w.sram_activations, Dimension::Bytes) + ")");
    if (w.memoryx_capacity > 0)
      row("MemoryX", format_quantity(w.memoryx_total(), Dimension::Bytes) + " of " +
                         format_quantity(w.memoryx_capacity, Dimension::Bytes) +
                         " (weights, gradients, Adam states)");
    row("fits", r.fits() ? "yes" : "NO: " + r.why_not_fitting);
  } else {
  out << "\nMemory per device (peak on stage " << r.memory.peak_stage << ")\n";
  const auto& pk = r.memory.stages[size_t(r.memory.peak_stage)];
  row("weights", format_quantity(pk.weights_bytes, Dimension::Bytes));
  row("gradients", format_quantity(pk.gradients_bytes, Dimension::Bytes));
  row("optimizer states", format_quantity(pk.optimizer_bytes, Dimension::Bytes));
  row("activations", format_quantity(pk.activations_bytes, Dimension::Bytes) + " (" +
                         std::to_string(pk.microbatches_in_flight) + " microbatches in flight)");
  row("total / capacity", format_quantity(pk.total_bytes(), Dimension::Bytes) + " / " +
                              format_quantity(r.memory.capacity_bytes, Dimension::Bytes) +
                              (r.memory.fits() ? "  fits" : "  DOES NOT FIT"));
  }
  if (!r.simulated) {
    out << "\nNot simulated: the plan does not fit in memory (" << r.why_not_fitting << ").\n";
    return;
  }
  out << "\nStep\n";
  row("step time", num("%.4f s", d.step));
  if (!r.wafer) {
    const auto iv = stack::step_interval(s.stack, d.step);
    row("  interval", iv.known ? num("%.4f", iv.low_s) + num(" - %.4f s, ", iv.high_s) + iv.basis : iv.basis);
  }
  row("throughput", num("%.2f samples/s", d.samples_per_s) + ", " + num("%.0f tokens/s", d.tokens_per_s));
  row("model TFLOP/s per device", num("%.1f", d.model_tflops) + num("  (MFU %.1f%%)", 100 * d.mfu));
  row("hardware TFLOP/s per device", num("%.1f", d.hw_tflops) + num("  (HFU %.1f%%)", 100 * d.hfu));
  out << "\nWhere the time goes (mean over simulated devices)\n";
  const auto& b = r.replay.average;
  auto part = [&](const char* k, double v) { row(k, num("%.4f s", v) + num("  %5.1f%%", 100 * v / d.step)); };
  part("compute", b.compute_s);
  part("  of which recomputation", b.recompute_s);
  part("exposed TP communication", b.exposed_tp_comm_s);
  part(r.wafer ? "exposed region hand-offs" : "exposed PP communication", b.exposed_pp_comm_s);
  part(r.wafer ? "exposed gradient streaming" : "exposed DP communication", b.exposed_dp_comm_s);
  if (s.parallel.ep > 1)
    part("exposed expert all-to-all", b.exposed_ep_comm_s);
  if (s.parallel.cp > 1)
    part("exposed context-parallel ring", b.exposed_cp_comm_s);
  part("pipeline bubble / idle", b.bubble_s);
  part("optimizer", b.optimizer_s);
  if (b.stack_overhead_s > 0)
    part("stack overhead per step", b.stack_overhead_s);
  if (r.wafer) {
    part("exposed weight streaming", b.exposed_weight_streaming_s);
    part("exposed on-wafer fabric", b.exposed_fabric_s);
  }
  if (d.power_W > 0)
    row("power, energy per step", format_quantity(d.power_W, Dimension::Power) + num(", %.3g kWh", d.energy_J / 3.6e6));
  out << "\n";
  row("simulated", std::to_string(r.replay.simulated_devices) + " devices (" + scenario::to_string(s.fidelity) +
                       "), " + std::to_string(r.replay.activities) + " activities\n");
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
  static const char* gpu_tracks[] = {"compute", "tensor-parallel", "pipeline", "data-parallel"};
  static const char* wafer_tracks[] = {"compute", "on-wafer fabric", "weights in", "gradients out"};
  const char* const* tracks = r.wafer ? wafer_tracks : gpu_tracks;
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
    std::string process = d < 0 ? "MemoryX" : (r.wafer ? (r.wafer_mode == scenario::WaferMode::LayerPipelined ? "region " : "system ") : "device ") + std::to_string(d);
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", d}, {"args", {{"name", process}}}});
    for (int t = 0; t < 4; ++t)
      events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", d}, {"tid", t}, {"args", {{"name", tracks[t]}}}});
    for (int t = 0; t < 4; ++t)
      for (int l = 1; l < n[size_t(t)]; ++l)
        events.push_back({{"name", "thread_name"},
                          {"ph", "M"},
                          {"pid", d},
                          {"tid", 4 * l + t},
                          {"args", {{"name", std::string(tracks[t]) + " (" + std::to_string(l + 1) + ")"}}}});
  }
  for (size_t i = 0; i < trace.size(); ++i) {
    const auto& e = trace[i];
    events.push_back({{"name", e.name},
                      {"cat", tracks[e.track]},
                      {"ph", "X"},
                      {"ts", e.start * 1e6},
                      {"dur", (e.end - e.start) * 1e6},
                      {"pid", e.device},
                      {"tid", 4 * lanes[i] + e.track}});
  }
  out << json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() << "\n";
}

}  // namespace dtsim::report
