// The report's parts of a wafer-scale system (Cerebras CS-2 class): the systems and the execution mode, on-wafer
// SRAM and MemoryX, the gradients streaming out and the hand-offs between regions in the breakdown, weight
// streaming and the on-wafer fabric, and the wafer's trace tracks. No software stack; the step-time interval comes
// from the wafer model's held-out published runs (wafer_interval.hpp).
#include <stdexcept>

#include "systems/cerebras_wafer/wafer_hardware.hpp"
#include "config/units.hpp"
#include "report/run_report.hpp"
#include "systems/cerebras_wafer/failure_assumptions.hpp"
#include "systems/cerebras_wafer/wafer_interval.hpp"
#include "systems/cerebras_wafer/wafer_run.hpp"

namespace dtsim::systems {

namespace {

using config::Dimension;
using config::format_quantity;
using report::Row;
using report::RunReport;

class WaferSections : public report::SystemSections {
 public:
  void placement_rows(const RunReport& r, const Row& row) const override
  {
    const auto& s = *r.scenario;
    row("systems", std::to_string(s.devices) + " x " + wafer_hardware(s.hardware).wafer.name +
                       (s.devices > 1 ? ", data parallel through SwarmX" : ""));
    const WaferRun& w = wafer_run(r);
    row("execution", std::string(scenario::to_string(w.mode)) + " (" + w.mode_reason + ")");
    row("recompute", scenario::describe_recompute(s.training) +
                         (s.training.recompute_reason.empty() ? " (set in the scenario)"
                                                              : " (" + s.training.recompute_reason + ")"));
  }

  // The wafer's kernels are the compiler's: no attention, loss or fp8 choices to report.
  void plan_json(nlohmann::ordered_json&, const RunReport&) const override {}

  void software_rows(const RunReport&, const Row&) const override {}

  std::string memory_heading(const RunReport&) const override { return "Memory"; }

  void memory_rows(const RunReport& r, const Row& row) const override
  {
    const auto& w = wafer_run(r).memory;
    row("on-wafer SRAM", format_quantity(w.sram_total(), Dimension::Bytes) + " of " +
                             format_quantity(w.sram_capacity, Dimension::Bytes) + " (weights and states " +
                             format_quantity(w.sram_weights, Dimension::Bytes) + ", activations " +
                             format_quantity(w.sram_activations, Dimension::Bytes) + ")");
    if (w.offloaded_activations > 0)
      row("layer inputs off the wafer", format_quantity(w.offloaded_activations, Dimension::Bytes) +
                                            " (recomputation checkpoints, brought back for each layer's backward)");
    if (w.memoryx_capacity > 0)
      row("MemoryX", format_quantity(w.memoryx_total(), Dimension::Bytes) + " of " +
                         format_quantity(w.memoryx_capacity, Dimension::Bytes) + " (weights, gradients, Adam states)");
    row("fits", r.fits() ? "yes" : "NO: " + r.why_not_fitting);
  }

  stack::StepInterval step_interval(const RunReport& r, double step_s) const override
  {
    return wafer::step_interval(wafer_hardware(r.scenario->hardware).wafer, step_s);
  }

  const char* tp_label() const override { return nullptr; }
  const char* pp_label() const override { return "exposed region hand-offs"; }
  const char* dp_label() const override { return "exposed gradient streaming"; }

  std::vector<report::ExtraTerm> extra_terms() const override
  {
    return {{"exposed weight streaming", "exposed_weight_streaming_s", &replay::Breakdown::exposed_weight_streaming_s},
            {"exposed on-wafer fabric", "exposed_fabric_s", &replay::Breakdown::exposed_fabric_s}};
  }

  void json_section(nlohmann::ordered_json& j, const RunReport& r) const override
  {
    const auto& s = *r.scenario;
    const WaferRun& run = wafer_run(r);
    const auto& w = run.memory;
    j["wafer"] = {{"mode", scenario::to_string(run.mode)},
                  {"mode_reason", run.mode_reason},
                  {"systems", s.parallel.dp},
                  {"sram_bytes", w.sram_total()},
                  {"sram_capacity_bytes", w.sram_capacity},
                  {"sram_weights_bytes", w.sram_weights},
                  {"sram_activations_bytes", w.sram_activations},
                  {"offloaded_activations_bytes", w.offloaded_activations},
                  {"memoryx_bytes", w.memoryx_total()},
                  {"memoryx_capacity_bytes", w.memoryx_capacity},
                  {"passes_per_step", s.microbatches},
                  {"recompute", scenario::describe_recompute(s.training)},
                  {"recompute_reason", s.training.recompute_reason.empty() ? std::string("set in the scenario")
                                                                           : s.training.recompute_reason}};
  }

  std::string execution(const RunReport& r) const override { return scenario::to_string(wafer_run(r).mode); }
  report::FailureAssumptions failure_assumptions(const RunReport& r) const override
  {
    return wafer_failure_assumptions(*r.scenario);
  }

  const char* track_name(int track) const override
  {
    static const char* tracks[] = {"compute", "on-wafer fabric", "weights in", "gradients out"};
    return tracks[track];
  }

  std::string process_name(const RunReport& r, int64_t device) const override
  {
    if (device < 0)
      return "MemoryX";
    return (wafer_run(r).mode == scenario::WaferMode::LayerPipelined ? "region " : "system ") + std::to_string(device);
  }
};

}  // namespace

const WaferRun& wafer_run(const report::RunReport& r)
{
  if (const auto* w = dynamic_cast<const WaferRun*>(r.detail.get()))
    return *w;
  throw std::logic_error("a report without the wafer wing's part was given to the wafer wing");
}

const report::SystemSections& cerebras_wafer_sections()
{
  static const WaferSections sections;
  return sections;
}

}  // namespace dtsim::systems
