#include "app/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>

#include <nlohmann/json.hpp>

#include "app/child_process.hpp"
#include "app/simulate.hpp"
#include "config/units.hpp"
#include "core/version.hpp"
#include "parallel/plan_space.hpp"
#include "report/run_report.hpp"

namespace dtsim::app {

namespace {

using json = nlohmann::ordered_json;

// What a child process sends back about one simulated scenario.
enum Field {
  kSimulated, kStep, kSamples, kTokens, kModelTflops, kHwTflops, kMfu, kPeakMem, kCapacity, kPower, kEnergy,
  kMode, kFields
};

std::vector<double> measure(const scenario::ScenarioSpec& s)
{
  auto r = simulate(s, false);
  auto d = report::derive(r);
  std::vector<double> v(kFields, 0.0);
  v[kSimulated] = r.simulated ? 1 : 0;
  v[kStep] = d.step;
  v[kSamples] = d.samples_per_s;
  v[kTokens] = d.tokens_per_s;
  v[kModelTflops] = d.model_tflops;
  v[kHwTflops] = d.hw_tflops;
  v[kMfu] = d.mfu;
  v[kPeakMem] = r.wafer ? r.wafer_memory.sram_total() : r.memory.peak_bytes();
  v[kCapacity] = r.wafer ? r.wafer_memory.sram_capacity : r.memory.capacity_bytes;
  v[kPower] = d.power_W;
  v[kEnergy] = d.energy_J;
  v[kMode] = double(int(r.wafer_mode));
  return v;
}

struct Burden {
  int64_t candidates = 0, invalid = 0, not_fitting = 0, plans = 0;
  double best = 0, worst = 0;
  std::string best_plan, worst_plan;
};

Burden burden_of(const scenario::ScenarioSpec& s, int jobs)
{
  Burden b;
  if (s.hardware.wafer_scale) {
    // The wafer offers its execution modes, nothing to partition: the modes that fit are its plans.
    b.candidates = 2;
    std::vector<scenario::ScenarioSpec> modes;
    for (auto m : {scenario::WaferMode::WeightStreaming, scenario::WaferMode::LayerPipelined}) {
      scenario::ScenarioSpec x = s;
      x.wafer_mode = m;
      modes.push_back(x);
    }
    std::vector<std::function<std::vector<double>()>> work;
    for (const auto& m : modes)
      work.push_back([&m]() { return measure(m); });
    auto res = run_in_children(work, jobs);
    for (size_t i = 0; i < res.size(); ++i) {
      if (!res[i] || (*res[i])[kSimulated] == 0) {
        ++b.not_fitting;
        continue;
      }
      double t = (*res[i])[kStep];
      std::string name = scenario::to_string(modes[i].wafer_mode);
      if (b.plans == 0 || t < b.best)
        b.best = t, b.best_plan = name;
      if (b.plans == 0 || t > b.worst)
        b.worst = t, b.worst_plan = name;
      ++b.plans;
    }
    return b;
  }
  auto space = parallel::enumerate_plans(s);
  b.candidates = space.candidates;
  b.invalid = space.invalid;
  b.not_fitting = space.not_fitting;
  std::vector<std::function<std::vector<double>()>> work;
  for (const auto& p : space.fitting)
    work.push_back([&p]() { return std::vector<double>{simulate(p, false).replay.step_time_s}; });
  auto res = run_in_children(work, jobs);
  for (size_t i = 0; i < res.size(); ++i) {
    if (!res[i] || res[i]->front() <= 0)
      continue;
    double t = res[i]->front();
    if (b.plans == 0 || t < b.best)
      b.best = t, b.best_plan = parallel::describe_plan(space.fitting[i]);
    if (b.plans == 0 || t > b.worst)
      b.worst = t, b.worst_plan = parallel::describe_plan(space.fitting[i]);
    ++b.plans;
  }
  return b;
}

}  // namespace

int compare(std::ostream& out, const CompareOptions& o)
{
  std::vector<scenario::ScenarioSpec> specs;
  for (const auto& path : o.scenarios)
    specs.push_back(scenario::load_scenario(path, {}));
  std::vector<std::function<std::vector<double>()>> work;
  for (const auto& s : specs)
    work.push_back([&s]() { return measure(s); });
  auto results = run_in_children(work, o.jobs);
  std::vector<Burden> burdens(specs.size());
  if (o.burden)
    for (size_t i = 0; i < specs.size(); ++i)
      burdens[i] = burden_of(specs[i], o.jobs);

  int simulated = 0;
  json rows = json::array();
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto& s = specs[i];
    json j;
    j["scenario"] = s.name;
    j["model"] = s.model.name;
    j["hardware"] = s.hardware.name;
    j["devices"] = s.devices;
    j["wafer_scale"] = s.hardware.wafer_scale;
    const auto& r = results[i];
    const bool ok = r && (*r)[kSimulated] > 0;
    simulated += ok;
    j["simulated"] = ok;
    if (ok) {
      const auto& v = *r;
      j["step_time_s"] = v[kStep];
      j["samples_per_s"] = v[kSamples];
      j["tokens_per_s"] = v[kTokens];
      j["model_tflops_per_device"] = v[kModelTflops];
      j["hardware_tflops_per_device"] = v[kHwTflops];
      j["model_tflops_total"] = v[kModelTflops] * double(s.devices);
      j["mfu"] = v[kMfu];
      j["memory_peak_bytes_per_device"] = v[kPeakMem];
      j["memory_headroom_bytes_per_device"] = v[kCapacity] - v[kPeakMem];
      j["power_w"] = v[kPower];
      j["energy_per_step_j"] = v[kEnergy];
      j["energy_per_sample_j"] = v[kEnergy] / double(s.training.global_batch);
      if (s.hardware.wafer_scale)
        j["wafer_mode"] = scenario::to_string(scenario::WaferMode(int(v[kMode])));
    }
    if (o.burden) {
      const auto& b = burdens[i];
      j["partitioning"] = {{"candidates", b.candidates}, {"invalid", b.invalid}, {"not_fitting", b.not_fitting},
                           {"plans", b.plans},           {"best_step_s", b.best}, {"worst_step_s", b.worst},
                           {"best_plan", b.best_plan},   {"worst_plan", b.worst_plan}};
      if (ok && b.best > 0)
        j["partitioning"]["this_plan_vs_best"] = (*r)[kStep] / b.best;
    }
    rows.push_back(j);
  }
  if (o.format == "json") {
    out << json{{"dtsim_version", kVersion}, {"scenarios", rows}}.dump(2) << "\n";
    return simulated > 0 ? 0 : 3;
  }

  // Table: one column per scenario.
  const size_t n = rows.size();
  auto cell = [](const json& j, const char* key, const char* fmt, double scale = 1) -> std::string {
    if (!j.contains(key))
      return "-";
    char b[64];
    std::snprintf(b, sizeof b, fmt, j[key].get<double>() * scale);
    return b;
  };
  std::vector<std::pair<std::string, std::vector<std::string>>> table;
  auto add = [&](const std::string& label, const std::function<std::string(const json&)>& f) {
    std::vector<std::string> v;
    for (const auto& j : rows)
      v.push_back(f(j));
    table.push_back({label, v});
  };
  add("hardware", [](const json& j) { return j["hardware"].get<std::string>().substr(0, 28); });
  add("devices", [](const json& j) {
    return std::to_string(j["devices"].get<int64_t>()) + (j["wafer_scale"].get<bool>() ? " systems" : " GPUs");
  });
  add("execution", [](const json& j) { return j.contains("wafer_mode") ? j["wafer_mode"].get<std::string>() : "-"; });
  add("step time (s)", [&](const json& j) { return cell(j, "step_time_s", "%.3f"); });
  add("samples/s", [&](const json& j) { return cell(j, "samples_per_s", "%.2f"); });
  add("tokens/s", [&](const json& j) { return cell(j, "tokens_per_s", "%.0f"); });
  add("model TFLOP/s per device", [&](const json& j) { return cell(j, "model_tflops_per_device", "%.1f"); });
  add("model PFLOP/s in all", [&](const json& j) { return cell(j, "model_tflops_total", "%.2f", 1e-3); });
  add("MFU", [&](const json& j) { return cell(j, "mfu", "%.1f%%", 100); });
  add("memory headroom/device (GiB)",
      [&](const json& j) { return cell(j, "memory_headroom_bytes_per_device", "%.1f", 1.0 / 1073741824.0); });
  add("power (kW)", [&](const json& j) { return cell(j, "power_w", "%.1f", 1e-3); });
  add("energy per step (MJ)", [&](const json& j) { return cell(j, "energy_per_step_j", "%.3f", 1e-6); });
  add("energy per sample (kJ)", [&](const json& j) { return cell(j, "energy_per_sample_j", "%.2f", 1e-3); });
  if (o.burden) {
    add("plans: looked at / valid", [](const json& j) {
      const auto& p = j["partitioning"];
      return std::to_string(p["candidates"].get<int64_t>()) + " / " + std::to_string(p["plans"].get<int64_t>());
    });
    add("best plan step (s)", [&](const json& j) { return cell(j["partitioning"], "best_step_s", "%.3f"); });
    add("worst plan step (s)", [&](const json& j) { return cell(j["partitioning"], "worst_step_s", "%.3f"); });
    add("worst / best", [](const json& j) {
      const auto& p = j["partitioning"];
      if (p["best_step_s"].get<double>() <= 0)
        return std::string("-");
      char b[32];
      std::snprintf(b, sizeof b, "%.2fx", p["worst_step_s"].get<double>() / p["best_step_s"].get<double>());
      return std::string(b);
    });
    add("this plan / best", [&](const json& j) {
      return j["partitioning"].contains("this_plan_vs_best") ? cell(j["partitioning"], "this_plan_vs_best", "%.2fx")
                                                             : std::string("-");
    });
  }
  size_t w0 = 30, w = 16;
  for (const auto& j : rows)
    w = std::max(w, j["scenario"].get<std::string>().size() + 2);
  w = std::min<size_t>(w, 30);
  auto pad = [](std::string s, size_t width) {
    if (s.size() > width - 1)
      s = s.substr(0, width - 1);
    return s + std::string(width - s.size(), ' ');
  };
  out << pad("", w0);
  for (const auto& j : rows)
    out << pad(j["scenario"].get<std::string>(), w);
  out << "\n";
  for (const auto& [label, cells] : table) {
    out << pad(label, w0);
    for (size_t i = 0; i < n; ++i)
      out << pad(cells[i], w);
    out << "\n";
  }
  if (o.burden)
    out << "\nPlans looked at on a GPU cluster: tensor parallel among the divisors of the node size, pipeline among the "
           "divisors of the layer count,\ndata parallel the rest; micro batch 1, 2, 4; selective or full recomputation; "
           "1F1B, or interleaved with 2 chunks.\nA wafer-scale system has its execution modes only "
           "(weight streaming, layer pipelined).\n";
  return simulated > 0 ? 0 : 3;
}

}  // namespace dtsim::app
