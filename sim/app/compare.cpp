#include "app/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <ostream>

#include <nlohmann/json.hpp>

#include "app/load.hpp"
#include "core/child_process.hpp"
#include "core/format_number.hpp"
#include "app/compare_verdict.hpp"
#include "app/progress.hpp"
#include "app/simulate.hpp"
#include "systems/system_kinds.hpp"
#include "config/units.hpp"
#include "core/version.hpp"
#include "model/transformer.hpp"
#include "report/run_record.hpp"

namespace dtsim::app {

namespace {

using json = nlohmann::ordered_json;

// The work of a child process: one scenario simulated, sent back as its run record.
Bytes record_of(const scenario::ScenarioSpec& s)
{
  return report::record_to_cbor(report::make_record(simulate(s, false)));
}

// The record a child sent back, or nothing when the child failed.
std::optional<report::RunRecord> received(const std::optional<Bytes>& bytes)
{
  if (!bytes)
    return std::nullopt;
  return report::record_from_cbor(*bytes);
}

// A record has a step time only when its plan fitted and was simulated.
bool was_simulated(const report::RunRecord& r) { return r.document.contains("step_time_s"); }

struct Burden {
  int64_t candidates = 0, invalid = 0, not_fitting = 0, plans = 0;
  double best = 0, worst = 0;
  std::string best_plan, worst_plan;
};

// Every plan the side's system offers, simulated: a GPU cluster's parallel plans, a wafer's execution modes.
Burden burden_of(const scenario::ScenarioSpec& s, int jobs, bool quiet)
{
  Burden b;
  systems::PlanChoices choices = systems::system_kind(s).plan_choices(s);
  b.candidates = choices.candidates;
  b.invalid = choices.invalid;
  b.not_fitting = choices.not_fitting;
  std::vector<std::function<Bytes()>> work;
  for (const auto& p : choices.plans)
    work.push_back([&p]() { return record_of(p); });
  // The enumeration is most of the command's time (minutes on a few cores): say how far it is.
  Progress progress(std::cerr, quiet, work.size(), 0, "compare: plans of " + s.name, "plans");
  auto res = run_in_children_bytes(work, jobs, [&](size_t done) { progress.update(done); });
  progress.update(work.size(), true);
  progress.finish();
  for (size_t i = 0; i < res.size(); ++i) {
    const auto record = received(res[i]);
    if (!record || !was_simulated(*record))
      continue;
    const double t = record->document["step_time_s"].get<double>();
    if (t <= 0)
      continue;
    if (b.plans == 0 || t < b.best)
      b.best = t, b.best_plan = choices.names[i];
    if (b.plans == 0 || t > b.worst)
      b.worst = t, b.worst_plan = choices.names[i];
    ++b.plans;
  }
  return b;
}

// Splits `text` into lines of at most `width` characters, at spaces where it can.
std::vector<std::string> wrap(const std::string& text, size_t width)
{
  std::vector<std::string> lines;
  std::string line;
  size_t i = 0;
  while (i < text.size()) {
    size_t end = text.find(' ', i);
    if (end == std::string::npos)
      end = text.size();
    std::string word = text.substr(i, end - i);
    i = end + 1;
    while (word.size() > width) {  // a word longer than the column: cut it
      if (!line.empty())
        lines.push_back(line), line.clear();
      lines.push_back(word.substr(0, width));
      word = word.substr(width);
    }
    if (!line.empty() && line.size() + 1 + word.size() > width)
      lines.push_back(line), line.clear();
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty() || lines.empty())
    lines.push_back(line);
  return lines;
}

}  // namespace

int compare(std::ostream& out, const CompareOptions& o)
{
  std::vector<scenario::ScenarioSpec> specs;
  for (const auto& path : o.scenarios)
    specs.push_back(load_for_simulation(path, o.sets));
  std::vector<std::function<Bytes()>> work;
  for (const auto& s : specs)
    work.push_back([&s]() { return record_of(s); });
  Progress progress(std::cerr, o.quiet, work.size(), 0, "compare: scenarios", "scenarios");
  auto results = run_in_children_bytes(work, o.jobs, [&](size_t done) { progress.update(done); });
  progress.update(work.size(), true);
  progress.finish();
  std::vector<Burden> burdens(specs.size());
  if (o.burden)
    for (size_t i = 0; i < specs.size(); ++i)
      burdens[i] = burden_of(specs[i], o.jobs, o.quiet);

  int simulated = 0;
  json rows = json::array();
  std::vector<CompareSide> sides;
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto& s = specs[i];
    json j;
    j["scenario"] = s.name;
    j["model"] = s.model.name;
    j["model_params"] = model::Transformer(s.model).total_params(s.training.seq_len);
    j["global_batch"] = s.training.global_batch;
    j["seq_len"] = s.training.seq_len;
    j["micro_batch"] = s.training.micro_batch;
    if (s.training.micro_batch_auto)
      j["micro_batch_reason"] = s.training.micro_batch_reason;
    const systems::SystemKind& kind = systems::system_kind(s);
    j["plan"] = kind.describe_plan(s);
    j["hardware"] = s.hardware.name;
    j["devices"] = s.devices;
    j["kind"] = kind.name();
    j["devices_in_words"] = kind.count_devices(s.devices);
    const auto r = received(results[i]);
    const bool ok = r && was_simulated(*r);
    simulated += ok;
    j["simulated"] = ok;
    CompareSide side;
    side.name = s.name;
    side.simulated = ok;
    side.why_not = !r ? "its simulation failed" : "it does not fit in memory";
    if (ok) {
      const json& run = r->document;
      auto number = [&](const char* key) { return run[key].get<double>(); };
      const double step = number("step_time_s");
      j["step_time_s"] = step;
      const auto iv = kind.step_interval(s, step);
      j["step_time_interval_s"] = iv.known ? json::array({iv.low_s, iv.high_s}) : json(nullptr);
      j["step_time_interval_basis"] = iv.basis;
      j["samples_per_s"] = number("samples_per_s");
      j["tokens_per_s"] = number("tokens_per_s");
      j["model_tflops_per_device"] = number("model_tflops_per_device");
      j["hardware_tflops_per_device"] = number("hardware_tflops_per_device");
      j["model_tflops_total"] = number("model_tflops_per_device") * double(s.devices);
      j["mfu"] = number("mfu");
      const std::vector<double> terms = compare_terms(run["breakdown"]);
      j["breakdown"] = json::object();
      for (int k = 0; k < kTerms; ++k)
        if (k != kTermStraggler || terms[size_t(k)] > 0)  // as in `dtsim run`'s record: present when not zero
          j["breakdown"][term_key(k)] = terms[size_t(k)];
      // A wafer's record holds its on-wafer SRAM as its one stage of memory.
      const double peak = run["memory"]["peak_bytes_per_device"].get<double>();
      j["memory_peak_bytes_per_device"] = peak;
      j["memory_headroom_bytes_per_device"] = run["memory"]["capacity_bytes_per_device"].get<double>() - peak;
      j["power_w"] = number("power_w");
      j["energy_per_step_j"] = number("energy_per_step_j");
      j["energy_per_sample_j"] = number("energy_per_step_j") / double(s.training.global_batch);
      if (run.contains("time_to_train_s")) {  // training.tokens given (null: the run never finishes)
        j["time_to_train_s"] = run["time_to_train_s"];
        j["goodput"] = run["goodput"];
      }
      if (!r->execution.empty())
        j["execution"] = r->execution;
      side.step_s = step;
      side.terms = terms;
    }
    sides.push_back(side);
    if (o.burden) {
      const auto& b = burdens[i];
      j["partitioning"] = {{"candidates", b.candidates}, {"invalid", b.invalid}, {"not_fitting", b.not_fitting},
                           {"plans", b.plans},           {"best_step_s", b.best}, {"worst_step_s", b.worst},
                           {"best_plan", b.best_plan},   {"worst_plan", b.worst_plan}};
      if (ok && b.best > 0)
        j["partitioning"]["this_plan_vs_best"] = r->document["step_time_s"].get<double>() / b.best;
    }
    rows.push_back(j);
  }
  const std::vector<std::string> sentences = verdict(sides);
  if (o.format == "json") {
    out << json{{"dtsim_version", kVersion}, {"scenarios", rows}, {"verdict", sentences}}.dump(2) << "\n";
    return simulated > 0 ? 0 : 3;
  }

  // Table: one column per scenario.
  const size_t n = rows.size();
  auto cell = [](const json& j, const char* key, const char* fmt, double scale = 1) -> std::string {
    if (!j.contains(key) || j[key].is_null())
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
  add("model", [&](const json& j) {
    return j["model"].get<std::string>() + " (" + cell(j, "model_params", "%.3g", 1e-9) + "B)";
  });
  add("batch x sequence", [](const json& j) {
    return std::to_string(j["global_batch"].get<int64_t>()) + " x " + std::to_string(j["seq_len"].get<int64_t>());
  });
  add("hardware", [](const json& j) { return j["hardware"].get<std::string>(); });
  add("devices", [](const json& j) { return j["devices_in_words"].get<std::string>(); });
  add("plan", [](const json& j) { return j["plan"].get<std::string>(); });
  add("execution", [](const json& j) { return j.contains("execution") ? j["execution"].get<std::string>() : "-"; });
  add("step time (s)", [&](const json& j) { return cell(j, "step_time_s", "%.3f"); });
  add("step-time interval (s)", [&](const json& j) -> std::string {
    if (!j.contains("step_time_interval_s"))
      return "-";
    const auto& iv = j["step_time_interval_s"];
    if (iv.is_null())
      return "none";
    char b[64];
    std::snprintf(b, sizeof b, "%.3f - %.3f", iv[0].get<double>(), iv[1].get<double>());
    return b;
  });
  add("samples/s", [&](const json& j) { return cell(j, "samples_per_s", "%.2f"); });
  add("tokens/s", [&](const json& j) { return cell(j, "tokens_per_s", "%.0f"); });
  add("model TFLOP/s per device", [&](const json& j) { return cell(j, "model_tflops_per_device", "%.1f"); });
  add("model PFLOP/s in all", [&](const json& j) { return cell(j, "model_tflops_total", "%.2f", 1e-3); });
  add("MFU", [&](const json& j) { return cell(j, "mfu", "%.1f%%", 100); });
  // The step's breakdown, every term for every side ("-": not simulated); stack overhead and the wait for slower
  // devices only where a side has them, so that the terms shown add up to each side's step.
  auto any_side_has = [&](int k) {
    for (const auto& j : rows)
      if (j.contains("breakdown") && j["breakdown"].value(term_key(k), 0.0) > 0)
        return true;
    return false;
  };
  for (int k = 0; k < kTerms; ++k) {
    if ((k == kTermOverhead || k == kTermStraggler) && !any_side_has(k))
      continue;
    add(std::string("  ") + term_name(k) + " (s)", [&, k](const json& j) {
      if (!j.contains("breakdown"))
        return std::string("-");
      return format_number("%.3f", j["breakdown"].value(term_key(k), 0.0));
    });
  }
  add("memory headroom/device (GiB)",
      [&](const json& j) { return cell(j, "memory_headroom_bytes_per_device", "%.1f", 1.0 / 1073741824.0); });
  add("power (kW)", [&](const json& j) { return cell(j, "power_w", "%.1f", 1e-3); });
  bool time_to_train = false;
  for (const auto& j : rows)
    time_to_train = time_to_train || j.contains("time_to_train_s");
  if (time_to_train) {
    add("time to train (days)", [&](const json& j) -> std::string {
      if (j.contains("time_to_train_s") && j["time_to_train_s"].is_null())
        return "never";
      return cell(j, "time_to_train_s", "%.1f", 1.0 / 86400);
    });
    add("  goodput", [&](const json& j) { return cell(j, "goodput", "%.1f%%", 100); });
  }
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
  for (const auto& row : table)
    w0 = std::max(w0, row.first.size() + 2);
  for (const auto& j : rows)
    w = std::max(w, j["scenario"].get<std::string>().size() + 2);
  w = std::min<size_t>(w, 30);
  // Each row takes as many lines as its longest cell needs: long names wrap instead of being cut.
  auto print_row = [&](const std::string& label, const std::vector<std::string>& cells) {
    std::vector<std::vector<std::string>> lines;
    size_t height = 1;
    for (const auto& c : cells) {
      lines.push_back(wrap(c, w - 1));
      height = std::max(height, lines.back().size());
    }
    for (size_t l = 0; l < height; ++l) {
      std::string text = l == 0 ? label : "";
      text += std::string(w0 > text.size() ? w0 - text.size() : 1, ' ');
      for (size_t i = 0; i < n; ++i) {
        const std::string part = l < lines[i].size() ? lines[i][l] : "";
        text += part + std::string(w - part.size(), ' ');
      }
      while (!text.empty() && text.back() == ' ')
        text.pop_back();
      out << text << "\n";
    }
  };
  std::vector<std::string> names;
  for (const auto& j : rows)
    names.push_back(j["scenario"].get<std::string>());
  print_row("", names);
  for (const auto& [label, cells] : table)
    print_row(label, cells);

  out << "\nStep-time intervals:\n";
  for (const auto& j : rows)
    if (j.contains("step_time_interval_basis"))
      out << "  " << j["scenario"].get<std::string>() << ": " << j["step_time_interval_basis"].get<std::string>()
          << "\n";
  bool any_auto = false;
  for (const auto& j : rows)
    any_auto = any_auto || j.contains("micro_batch_reason");
  if (any_auto) {
    out << "Micro batch chosen as the compiler does:\n";
    for (const auto& j : rows)
      if (j.contains("micro_batch_reason"))
        out << "  " << j["scenario"].get<std::string>() << ": " << j["micro_batch"].get<int64_t>() << " ("
            << j["micro_batch_reason"].get<std::string>() << ")\n";
  }
  if (o.burden)
    out << "\nPlans looked at on a GPU cluster: tensor parallel among the divisors of the node size, pipeline among "
           "the divisors of the layer count,\ndata parallel the rest; micro batch 1, 2, 4; selective or full "
           "recomputation; 1F1B, interleaved with 2 chunks,\nand with a pipeline zb-h1, zb-h2, zb-v (2 chunks) and "
           "(even pp) DualPipe.\nA wafer-scale system has its execution modes only "
           "(weight streaming, layer pipelined).\n";
  out << "\nIn short:\n";
  for (const auto& sentence : sentences)
    out << "  " << sentence << "\n";
  return simulated > 0 ? 0 : 3;
}

}  // namespace dtsim::app
