// The report's parts of a GPU cluster: nodes and the parallel plan, the software stack, memory per device on the
// peak stage, and the names of the communication terms and trace tracks.
#include "config/units.hpp"
#include "kernels/attention_kernel.hpp"
#include "parallel/placement.hpp"
#include "report/run_report.hpp"
#include "scenario/job_segment.hpp"
#include "stack/interval.hpp"
#include "systems/gpu_cluster/failure_assumptions.hpp"
#include "systems/gpu_cluster/gpu_cluster.hpp"

namespace dtsim::systems {

namespace {

using report::Row;
using report::RunReport;

using config::Dimension;
using config::format_quantity;

parallel::Placement placement_of(const scenario::ScenarioSpec& s)
{
  return parallel::Placement(s.parallel.dp_cp(), s.parallel.tp, s.parallel.pp, s.hardware.domain_devices());
}

class GpuSections : public report::SystemSections {
 public:
  void placement_rows(const RunReport& r, const Row& row) const override
  {
    const auto& s = *r.scenario;
    const int64_t nodes = (s.devices + s.hardware.node.devices - 1) / s.hardware.node.devices;
    row("devices", std::to_string(s.devices) + " (" + std::to_string(nodes) + (nodes == 1 ? " node" : " nodes") +
                       " of " + std::to_string(s.hardware.node.devices) + ")");
    if (s.hardware.scale_up.from_section) {  // a DGX-style node is its own domain: the row above says it
      const int64_t per = s.hardware.domain_devices();
      const int64_t domains = (s.devices + per - 1) / per, last = s.devices - (domains - 1) * per;
      row("NVLink domains", std::to_string(domains) + " of " + std::to_string(per) + " devices (" +
                                std::to_string(s.hardware.scale_up.nodes) + " nodes each" +
                                scenario::segment_note(s) + ")" +
                                (last < per ? ", " + std::to_string(last) + " used of the last" : "") + "; tp " +
                                (s.parallel.tp <= per ? "within one" : "across domains"));
      if (const auto straddling = parallel::tp_straddling_note(placement_of(s)); !straddling.empty())
        row("", straddling);
    }
    row("plan", "dp " + std::to_string(s.parallel.dp) + ", tp " + std::to_string(s.parallel.tp) + ", pp " +
                    std::to_string(s.parallel.pp) +
                    (s.parallel.vpp > 1 ? ", vpp " + std::to_string(s.parallel.vpp) : "") +
                    (s.parallel.sp ? ", sp" : "") +
                    (s.parallel.cp > 1 ? ", cp " + std::to_string(s.parallel.cp) : "") +
                    (s.parallel.ep > 1 ? ", ep " + std::to_string(s.parallel.ep) : "") +
                    (s.parallel.experts_whole() && s.model.experts > 0 ? " (experts whole)" : "") +
                    (s.parallel.zero > 0 ? ", ZeRO-" + std::to_string(s.parallel.zero) : "") + ", " +
                    s.schedule);
  }

  // The kernels the stack or the scenario chose: attention, the loss, the fp8 recipe.
  void plan_json(nlohmann::ordered_json& plan, const RunReport& r) const override
  {
    const auto& s = *r.scenario;
    plan["flash_attention"] = s.training.flash_attention;
    plan["cross_entropy"] = stack::to_string(s.training.cross_entropy);
    if (s.training.precision == "fp8")
      plan["fp8_recipe"] = stack::to_string(s.training.fp8_recipe);
  }

  void software_rows(const RunReport& r, const Row& row) const override
  {
    const auto& s = *r.scenario;
    row("software stack", s.stack.given() ? s.stack.name + " (" + s.stack.file + ")" : "none (no corrections)");
    // The kernel choices the scenario or its stack made, so that a reader sees what was timed.
    std::string kernels = std::string("attention ") + (s.training.flash_attention ? "fused" : "unfused");
    if (s.training.flash_attention) {  // the kernel timed, and why where it is not the one the stack names
      const auto timed = kernels::attention_kernel_for(s.hardware.device, s.stack.attention, s.stack.attention_given);
      kernels += std::string(" (") + stack::to_string(timed);
      if (s.stack.attention_given && timed != s.stack.attention && s.stack.attention != stack::AttentionKernel::Unfused)
        kernels += std::string(": ") + s.hardware.file + " gives no " + stack::to_string(s.stack.attention) +
                   " figures for " + s.hardware.device.name;
      kernels += ")";
    }
    kernels += std::string(", loss ") + stack::to_string(s.training.cross_entropy);
    if (s.training.precision == "fp8")
      kernels += std::string(", fp8 ") + stack::to_string(s.training.fp8_recipe) + " scaling";
    if (s.training.precision == "mxfp8")
      kernels += ", MXFP8 block scaling (1x32, E8M0 scales)";
    if (s.training.precision == "nvfp4")
      kernels += ", NVFP4 block scaling (1x16, E4M3 scales, per-tensor FP32 scale)";
    row("kernels", kernels);
  }

  std::string memory_heading(const RunReport& r) const override
  {
    return "Memory per device (peak on stage " + std::to_string(r.memory.peak_stage) + ")";
  }

  void memory_rows(const RunReport& r, const Row& row) const override
  {
    const auto& pk = r.memory.stages[size_t(r.memory.peak_stage)];
    row("weights", format_quantity(pk.weights_bytes, Dimension::Bytes));
    row("gradients", format_quantity(pk.gradients_bytes, Dimension::Bytes));
    row("optimizer states", format_quantity(pk.optimizer_bytes, Dimension::Bytes));
    row("activations", format_quantity(pk.activations_bytes, Dimension::Bytes) + " (" +
                           std::to_string(pk.microbatches_in_flight) +
                           (pk.microbatches_in_flight == 1 ? " microbatch" : " microbatches") + " in flight)");
    if (pk.framework_bytes > 0)
      row(r.scenario->hardware.device.runtime == "rocm" ? "HIP context, RCCL" : "CUDA context, NCCL",
          format_quantity(pk.framework_bytes, Dimension::Bytes) + " (" + std::to_string(r.memory.communicators) +
              (r.memory.communicators == 1 ? " communicator)" : " communicators)"));
    if (r.memory.allocator_reserve_bytes > 0)
      row("total / usable", format_quantity(pk.total_bytes(), Dimension::Bytes) + " / " +
                                format_quantity(r.memory.usable_bytes(), Dimension::Bytes) + " (" +
                                format_quantity(r.memory.capacity_bytes, Dimension::Bytes) +
                                " less the allocator's reserve)" + (r.memory.fits() ? "  fits" : "  DOES NOT FIT"));
    else
      row("total / capacity", format_quantity(pk.total_bytes(), Dimension::Bytes) + " / " +
                                  format_quantity(r.memory.capacity_bytes, Dimension::Bytes) +
                                  (r.memory.fits() ? "  fits" : "  DOES NOT FIT"));
  }

  const char* tp_label() const override { return "exposed TP communication"; }
  const char* pp_label() const override { return "exposed PP communication"; }
  const char* dp_label() const override { return "exposed DP communication"; }
  std::vector<report::ExtraTerm> extra_terms() const override { return {}; }
  // The scale-up domain, where the hardware has a scale_up section (a DGX-style node is its own domain, and its
  // records keep their keys).
  void json_section(nlohmann::ordered_json& j, const RunReport& r) const override
  {
    const auto& s = *r.scenario;
    if (!s.hardware.scale_up.from_section)
      return;
    const int64_t per = s.hardware.domain_devices();
    j["scale_up"] = {{"domains", (s.devices + per - 1) / per},
                     {"devices_per_domain", per},
                     {"nodes_per_domain", s.hardware.scale_up.nodes},
                     {"tp_within_domain", s.parallel.tp <= per},
                     {"tp_groups_straddling", placement_of(s).tp_groups_straddling()}};
    if (s.placement.segment > 0)  // nodes_per_domain is the segment's; the hardware file's count beside it
      j["scale_up"]["hardware_nodes_per_domain"] = s.placement.domain_nodes;
  }
  std::string execution(const RunReport&) const override { return ""; }
  report::FailureAssumptions failure_assumptions(const RunReport& r) const override
  {
    return gpu_failure_assumptions(*r.scenario);
  }

  const char* track_name(int track) const override
  {
    static const char* tracks[] = {"compute", "tensor-parallel", "pipeline", "data-parallel"};
    return tracks[track];
  }

  std::string process_name(const RunReport& r, int64_t device) const override
  {
    if (device < 0)
      return "MemoryX";
    const auto& hw = r.scenario->hardware;
    if (!hw.scale_up.from_section)
      return "device " + std::to_string(device);
    // Its NVLink domain and node: the trace groups a rack's devices together.
    const int64_t per = hw.domain_devices();
    const int64_t domain = device / per, node = domain * hw.scale_up.nodes + (device % per) / hw.node.devices;
    return "device " + std::to_string(device) + " (domain " + std::to_string(domain) + ", node " +
           std::to_string(node) + ")";
  }
};

}  // namespace

const report::SystemSections& gpu_cluster_sections()
{
  static const GpuSections sections;
  return sections;
}

}  // namespace dtsim::systems
