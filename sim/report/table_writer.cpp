#include "report/table_writer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>

#include "config/units.hpp"
#include "core/format_number.hpp"

namespace dtsim::report {

namespace {

using config::Dimension;
using config::format_quantity;
using json = nlohmann::ordered_json;

// Parameters and tokens as people write them: 3.55M, 1.3B, 175B, 15.6T (three significant digits with the largest
// scale that leaves at least 1), no space before the scale ("1 B" reads as a byte); under a thousand, the count.
std::string count_in_words(double n)
{
  return n >= 1e12  ? format_number("%.3gT", n / 1e12)
         : n >= 1e9 ? format_number("%.3gB", n / 1e9)
         : n >= 1e6 ? format_number("%.3gM", n / 1e6)
         : n >= 1e3 ? format_number("%.3gK", n / 1e3)
                    : format_number("%.0f", n);
}

// "  key" padded to the table's value column (30 characters), or the key and one space where it is longer.
std::string padded_key(const std::string& key)
{
  std::string out = "  " + key;
  out.resize(std::max<size_t>(out.size() + 1, 31), ' ');
  return out;
}

std::string text(const json& j, const char* key) { return j.at(key).get<std::string>(); }
std::string count(const json& j, const char* key) { return std::to_string(j.at(key).get<int64_t>()); }

// A checkpoint's size in decimal units, as the storage bandwidth beside it (GB/s): 5.68 TB, 14 GB, 49.7 MB.
std::string storage_bytes(double bytes)
{
  return bytes >= 1e12  ? format_number("%.3g TB", bytes / 1e12)
         : bytes >= 1e9 ? format_number("%.3g GB", bytes / 1e9)
                        : format_number("%.3g MB", bytes / 1e6);
}

// ", 620 failures expected)"; under ten with two significant digits (", 0.48 failures expected)"), so that a run
// whose lost work is counted does not read as expecting no failure.
std::string failures_expected(double n)
{
  return n >= 10 ? format_number(", %.0f failures expected)", n) : format_number(", %.2g failures expected)", n);
}

// Decimals that give a step four significant digits, and at least four (a step of 11.0518 s, of 0.004342 s).
int step_decimals(double step_s)
{
  if (!(step_s > 0) || step_s >= 0.1)
    return 4;
  return std::min(12, 3 - int(std::floor(std::log10(step_s))));
}

// The whole run's time, failures and checkpoints included (document's `time_to_train`).
void time_to_train_rows(std::ostream& out, const json& doc, const Row& row)
{
  const json& t = doc.at("time_to_train");
  const int64_t steps = t.at("steps").get<int64_t>();
  out << "\nTime to train " << count_in_words(t.at("tokens").get<double>()) << " tokens (" << steps
      << (steps == 1 ? " step)\n" : " steps)\n");
  if (t.contains("why_not")) {
    row("time to train", text(t, "why_not"));  // "the run never finishes: ..."
  } else {
    row("time to train", format_number("%.1f days", doc.at("time_to_train_s").get<double>() / 86400) +
                             format_number("  (goodput %.1f%%", 100 * doc.at("goodput").get<double>()) +
                             failures_expected(t.at("expected_failures").get<double>()));
    row("  steps alone", format_number("%.1f days", t.at("compute_s").get<double>() / 86400));
    const bool async = text(t, "checkpoint") == "async";
    row("  checkpoint writes",
        format_number("%.2f days", t.at("checkpoint_stall_s").get<double>() / 86400) +
            " (every " + format_quantity(t.at("checkpoint_interval_s").get<double>(), Dimension::Time) + ", " +
            storage_bytes(t.at("checkpoint_bytes").get<double>()) + " in " +
            format_quantity(t.at("checkpoint_write_s").get<double>(), Dimension::Time) + " each, " +
            (async ? "asynchronous" : "synchronous") + ", interval " +
            (text(t, "checkpoint_interval_basis") == "scenario" ? "from the scenario" : "by Young-Daly") + ")");
    row("  restarts", format_number("%.2f days", t.at("restarts_s").get<double>() / 86400));
    row("  work lost to failures",
        format_number("%.2f days", t.at("lost_work_s").get<double>() / 86400) +
            " (the job fails every " + format_quantity(t.at("job_mtbf_s").get<double>(), Dimension::Time) + ")");
  }
  row("  failures and checkpoints", text(t, "basis"));
}

}  // namespace

void write_table(std::ostream& out, const RunRecord& record)
{
  const json& doc = record.document;
  const json& plan = doc.at("plan");
  const RunTable& table = record.table;
  // The value is written whole, however long (a wafer's reasons run past 200 characters).
  auto row = [&](const char* k, const std::string& v) { out << padded_key(k) << v << "\n"; };
  auto rows = [&](const std::vector<TableRow>& given) {
    for (const auto& r : given)
      row(r.key.c_str(), r.value);
  };
  out << "dtsim " << text(doc, "dtsim_version") << ": " << text(doc, "scenario") << "\n";
  row("model", text(doc, "model") + " (" + count_in_words(doc.at("params").get<double>()) + " parameters)");
  row("hardware", text(doc, "hardware"));
  rows(table.placement);
  const int64_t microbatches = plan.at("microbatches").get<int64_t>();
  row("batch", count(plan, "global_batch") + " x " + count(plan, "seq_len") + " tokens, micro batch " +
                   count(plan, "micro_batch") + ", " + std::to_string(microbatches) +
                   (microbatches == 1 ? " microbatch" : " microbatches") + " per pipeline");
  if (plan.contains("micro_batch_reason"))
    row("micro batch", count(plan, "micro_batch") + " (" + text(plan, "micro_batch_reason") + ")");
  row("training", text(plan, "precision") + ", recompute " + table.recompute);
  rows(table.software);
  out << "\n" << table.memory_heading << "\n";
  rows(table.memory);
  if (!doc.contains("step_time_s")) {
    out << "\nNot simulated: the plan does not fit in memory (" << doc.value("why_not_fitting", "") << ").\n";
    return;
  }
  const double step = doc.at("step_time_s").get<double>();
  // The step, its interval and its sampled spread to the same decimals: four, or four significant digits for a
  // step under 0.1 s (0.004342 s: "0.0043 s" left a tiny step's spread as "p5 0.0042 / p50 0.0043 / p95 0.0043").
  const std::string seconds = "%." + std::to_string(step_decimals(step)) + "f";
  auto secs = [&](const json& v) { return format_number(seconds.c_str(), v.get<double>()); };
  out << "\nStep\n";
  row("step time", secs(doc.at("step_time_s")) + " s");
  const json& interval = doc.at("step_time_interval_s");
  const std::string basis = text(doc, "step_time_interval_basis");
  row("  interval", interval.is_null() ? basis : secs(interval.at(0)) + " - " + secs(interval.at(1)) + " s, " + basis);
  if (doc.contains("step_time_spread_s")) {
    const json& spread = doc.at("step_time_spread_s");
    const json& v = doc.at("variability");
    row("  sampled steps", format_number("mean of %.0f", v.at("samples").get<double>()) + ", p5 " +
                               secs(spread.at("p5")) + " / p50 " + secs(spread.at("p50")) + " / p95 " +
                               secs(spread.at("p95")) + " s" +
                               format_number(" (seed %.0f)", v.at("seed").get<double>()));
  }
  if (doc.contains("trace_sample")) {
    const json& traced = doc.at("trace_sample");
    row("  traced step", format_number("sample %.0f", traced.at("sample").get<double>()) +
                             format_number(" of %.0f", traced.at("samples").get<double>()) +
                             format_number(" (seed %.0f), ", traced.at("seed").get<double>()) +
                             secs(traced.at("step_time_s")) + " s: the trace shows that step, not the mean");
  }
  row("throughput", format_number("%.2f samples/s", doc.at("samples_per_s").get<double>()) + ", " +
                        format_number("%.0f tokens/s", doc.at("tokens_per_s").get<double>()));
  row("model TFLOP/s per device", format_number("%.1f", doc.at("model_tflops_per_device").get<double>()) +
                                      format_number("  (MFU %.1f%%)", 100 * doc.at("mfu").get<double>()));
  row("hardware TFLOP/s per device", format_number("%.1f", doc.at("hardware_tflops_per_device").get<double>()) +
                                         format_number("  (HFU %.1f%%)", 100 * doc.at("hfu").get<double>()));
  out << "\nWhere the time goes (mean over simulated devices)\n";
  const json& breakdown = doc.at("breakdown");
  for (const auto& term : table.breakdown) {
    const double v = breakdown.at(term.key).get<double>();
    row(term.label.c_str(), format_number("%.4f s", v) + format_number("  %5.1f%%", 100 * v / step));
  }
  const double power = doc.at("power_w").get<double>();
  // Energy in MJ, as `dtsim compare` gives it: one unit for the same figure in both tables.
  if (power > 0)
    row("power, energy per step", format_quantity(power, Dimension::Power) +
                                      format_number(", %.3g MJ", doc.at("energy_per_step_j").get<double>() / 1e6));
  if (doc.contains("time_to_train"))
    time_to_train_rows(out, doc, row);
  out << "\n";
  const json& sim = doc.at("simulation");
  // The fidelity only where the run has devices to fold (more than one).
  const int64_t simulated = sim.at("simulated_devices").get<int64_t>();
  const std::string fidelity = doc.at("devices").get<int64_t>() > 1 ? " (" + text(plan, "fidelity") + ")" : "";
  row("simulated", std::to_string(simulated) + (simulated == 1 ? " device" : " devices") + fidelity + ", " +
                       count(sim, "activities") + " activities\n");
  if (sim.contains("folding_note"))
    out << "  note: " << text(sim, "folding_note") << "\n";
}

}  // namespace dtsim::report
