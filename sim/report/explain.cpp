#include "report/explain.hpp"

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <string>

#include "kernels/compute_model.hpp"
#include "model/transformer.hpp"
#include "parallel/all_to_all.hpp"
#include "parallel/collective.hpp"
#include "parallel/plan.hpp"

namespace dtsim::report {

namespace {

// A pass's kernels and the collectives it waits for, by the kind of group each runs in.
struct PassTime {
  double kernels_s = 0, tensor_parallel_s = 0, expert_all_to_all_s = 0, context_ring_s = 0;
  bool expert_all_to_alls = false, context_rings = false;  ///< the pass has some
  double total() const { return kernels_s + tensor_parallel_s + expert_all_to_all_s + context_ring_s; }
};

// "kernels K + tensor-parallel collectives T[ + expert all-to-alls E][ + context-parallel rings C]", in ms: each
// kind of collective under its own name, those of a kind the pass does not run left out.
std::string pass_terms(const PassTime& pt)
{
  char b[256];
  std::snprintf(b, sizeof b, "kernels %.3f + tensor-parallel collectives %.3f", pt.kernels_s * 1e3,
                pt.tensor_parallel_s * 1e3);
  std::string out = b;
  if (pt.expert_all_to_alls) {
    std::snprintf(b, sizeof b, " + expert all-to-alls %.3f", pt.expert_all_to_all_s * 1e3);
    out += b;
  }
  if (pt.context_rings) {
    std::snprintf(b, sizeof b, " + context-parallel rings %.3f", pt.context_ring_s * 1e3);
    out += b;
  }
  return out;
}

// Which layers recomputation re-runs, as the replay does (scenario/layer_partition.hpp), on stage 0, whose rank the
// kernels above are of.
std::string recompute_scope(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan)
{
  const int64_t layers = plan.stage_layers(0), recomputed = plan.stage_recomputed_layers(0);
  const std::string of_stage = " of the " + std::to_string(layers) + " layers of stage 0";
  switch (s.training.recompute) {
    case scenario::Recompute::None:
      return "none";
    case scenario::Recompute::Selective:
      return "selective: each layer's attention core, in all " + std::to_string(layers) + " layers of stage 0";
    case scenario::Recompute::Full:
      break;
  }
  if (s.training.recompute_layers == 0)
    return "full: all " + std::to_string(layers) + " layers of stage 0";
  return "full: " + std::to_string(recomputed) + of_stage + ", the first " +
         std::to_string(s.training.recompute_layers) +
         " of each chunk by training.recompute_layers; the others keep their activations";
}

// Collective times are the simulation's own rules on the groups of the first rank (stage 0, data-parallel index 0,
// tensor-parallel rank 0), on uncontended links (the replay adds contention): NCCL's predicted time of the collective
// the replay runs, on the group's shape with the switch tiers' latency (collectives::collective_time), and the expert
// all-to-all at its best case with node-limited routing's scale (collectives::expert_all_to_all_time), as the
// search's bound prices them.
PassTime print_pass(std::ostream& out, const char* title, const std::vector<model::Segment>& segs,
                    const kernels::ComputeModel& cm, const scenario::ScenarioSpec& s,
                    const parallel::DerivedPlan& plan, int name_width)
{
  PassTime pt;
  const auto fabric = collectives::fabric_of(s);
  char line[512];
  out << title << "\n";
  for (const auto& seg : segs) {
    if (seg.is_collective()) {
      const bool a2a = seg.collective == model::TpCollective::AllToAll;
      const bool ring = seg.collective == model::TpCollective::ContextGather ||
                        seg.collective == model::TpCollective::ContextGatherReduce;
      const std::vector<int64_t> group = a2a ? plan.ep_group(0, 0, 0) : ring ? plan.cp_group(0, 0, 0)
                                                                           : plan.tp_group(0, 0);
      const double ct =
          a2a ? collectives::expert_all_to_all_time(seg.collective_bytes, group, plan.placement, fabric, s.model)
              : collectives::collective_time(collectives::kind_of(seg.collective), seg.collective_bytes, group,
                                             plan.placement, fabric);
      if (!seg.beside_next)  // beside the kernels after it: their time, not added (the replay adds contention)
        (a2a ? pt.expert_all_to_all_s : ring ? pt.context_ring_s : pt.tensor_parallel_s) += ct;
      pt.expert_all_to_alls = pt.expert_all_to_alls || a2a;
      pt.context_rings = pt.context_rings || ring;
      std::snprintf(line, sizeof line, "  %-*s %-26s %10s %10.2f %8.1f\n", name_width, model::to_string(seg.collective),
                    a2a               ? "(expert-parallel group)"
                    : ring            ? "(context-parallel ring)"
                    : seg.beside_next ? "(TP group, beside next)"
                                      : "(tensor-parallel group)",
                    "", seg.collective_bytes / 1e6, ct * 1e6);
      out << line;
      continue;
    }
    for (const auto& op : seg.ops) {
      double t = cm.seconds(op);
      pt.kernels_s += t;
      std::string shape = "-", of_peak = "-";  // of peak: GEMMs only
      if (op.kind == model::Op::Kind::Gemm) {
        char b[64];
        std::snprintf(b, sizeof b, "%gx%gx%gx%g", op.batch, op.m, op.n, op.k);
        shape = b;
        char e[32];
        std::snprintf(e, sizeof e, "%.1f%%", 100 * op.flops() / t / cm.peak_flops(op));
        of_peak = e;
      }
      std::snprintf(line, sizeof line, "  %-*s %-26s %10.2f %10.2f %8.1f %10s\n", name_width, op.name.c_str(),
                    shape.c_str(),
                    op.flops() / 1e9, op.bytes / 1e6, t * 1e6, of_peak.c_str());
      out << line;
    }
  }
  return pt;
}

// The kernel column as wide as the longest kernel name of the passes listed (at least 24), so that the columns
// after it line up: block-scaled recipes name kernels such as "fc1_gate_up.scale_swizzle.dgrad_weight" (38).
int name_column_width(const std::vector<const std::vector<model::Segment>*>& passes)
{
  size_t width = 24;
  for (const auto* segs : passes)
    for (const auto& seg : *segs)
      for (const auto& op : seg.ops)
        width = std::max(width, op.name.size());
  return int(std::min<size_t>(width, 200));
}

}  // namespace

void print_explain(std::ostream& out, const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan)
{
  model::Transformer t(s.model);
  kernels::ComputeModel cm(s.hardware.device, plan.precision.name, s.stack);
  const model::Shape& shape = plan.shape;
  const auto& g = plan.groups;
  out << "Kernels of one microbatch on one tensor-parallel rank (" << s.model.name << ", micro batch "
      << shape.micro_batch << ", sequence " << shape.seq << ", tp " << g.tp << (shape.sp ? ", sp" : "") << ", "
      << plan.precision.name << " on " << s.hardware.device.name << ")\n";
  if (s.hardware.scale_up.from_section)  // a DGX-style node is its own domain
    out << "  NVLink domain of " << s.hardware.domain_devices() << " devices (" << s.hardware.scale_up.nodes
        << " nodes of " << s.hardware.node.devices << "): collectives of groups inside it run on NVLink\n";
  auto layer = t.layer(shape);
  const auto embedding = t.embedding(shape);
  const auto head_pass = t.head(shape);
  const int width = name_column_width(
      {&layer.forward, &layer.backward, &embedding.forward, &head_pass.forward, &head_pass.backward});
  char head[512];
  std::snprintf(head, sizeof head, "  %-*s %-26s %10s %10s %8s %10s\n", width, "kernel",
                "shape (batch x m x n x k)", "GFLOP", "MB", "us", "of peak");
  out << head;
  if (cm.mixed_peaks())
    out << "  (of peak: the linear layers' GEMMs against the " << plan.precision.name
        << " peak, the other GEMMs against the bf16 peak)\n";
  PassTime fwd = print_pass(out, "layer forward", layer.forward, cm, s, plan, width);
  PassTime bwd = print_pass(out, "layer backward", layer.backward, cm, s, plan, width);
  print_pass(out, "embedding forward", embedding.forward, cm, s, plan, width);
  print_pass(out, "head forward", head_pass.forward, cm, s, plan, width);
  print_pass(out, "head backward", head_pass.backward, cm, s, plan, width);
  double recompute = 0;
  if (s.training.recompute == scenario::Recompute::Full)
    recompute = fwd.total();
  else if (s.training.recompute == scenario::Recompute::Selective)
    for (const auto& op : layer.selective_recompute)
      recompute += cm.seconds(op);
  // A rank's share of the layer: its tensor-parallel slice of its context-parallel part of the sequence.
  double flops = plan.layer_forward_flops / double(g.tp * g.cp);
  // Under training.recompute_layers only some layers are recomputed: the total of one that is not, too.
  std::string not_recomputed;
  if (s.training.recompute == scenario::Recompute::Full && s.training.recompute_layers > 0) {
    char b[128];
    std::snprintf(b, sizeof b, " for a recomputed layer; %.3f ms for one that is not",
                  (fwd.total() + bwd.total()) * 1e3);
    not_recomputed = b;
  }
  char line[1024];
  std::snprintf(line, sizeof line,
                "\none layer, one microbatch (collectives at NCCL's uncontended time on the replay's groups; those beside "
                "the next kernels not added):\n"
                "  forward   %8.3f ms = %s (kernels at %.1f%% of the %s peak)\n"
                "  backward  %8.3f ms = %s (kernels at %.1f%% of the %s peak)\n"
                "  recompute %8.3f ms (%s)\n"
                "  total     %8.3f ms%s\n",
                fwd.total() * 1e3, pass_terms(fwd).c_str(), 100 * flops / fwd.kernels_s / cm.peak_flops(),
                plan.precision.name.c_str(), bwd.total() * 1e3, pass_terms(bwd).c_str(),
                100 * 2 * flops / bwd.kernels_s / cm.peak_flops(), plan.precision.name.c_str(),
                recompute * 1e3, recompute_scope(s, plan).c_str(), (fwd.total() + bwd.total() + recompute) * 1e3,
                not_recomputed.c_str());
  out << line;
}

}  // namespace dtsim::report
