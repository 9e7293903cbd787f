#include "report/explain.hpp"

#include <cstdio>
#include <ostream>

#include "parallel/collective.hpp"
#include "kernels/compute_model.hpp"
#include "model/transformer.hpp"
#include "parallel/plan.hpp"

namespace dtsim::report {

namespace {

struct PassTime {
  double kernels_s = 0, collectives_s = 0;
  double total() const { return kernels_s + collectives_s; }
};

// Collective times are the alpha-beta ring time on uncontended links (the replay adds contention).
PassTime print_pass(std::ostream& out, const char* title, const std::vector<model::Segment>& segs,
                    const kernels::ComputeModel& cm, const scenario::ScenarioSpec& s,
                    const parallel::ParallelGroups& g)
{
  PassTime pt;
  const auto fabric = collectives::fabric_of(s);
  char line[256];
  out << title << "\n";
  for (const auto& seg : segs) {
    if (seg.is_collective()) {
      // The expert all-to-all spans ep ranks and the context ring cp ranks, both next to tp in the placement:
      // inside a scale-up (NVLink) domain only when tp times the group fits in one.
      const bool a2a = seg.collective == model::TpCollective::AllToAll;
      const bool ring = seg.collective == model::TpCollective::ContextGather ||
                        seg.collective == model::TpCollective::ContextGatherReduce;
      const int64_t n = a2a ? g.ep : ring ? g.cp : g.tp;
      // NCCL's predicted time for the group's shape: one domain when it fits (tp times the group for the expert
      // and context groups), else one member per domain.
      const bool in_domain = (!a2a && !ring ? n : g.tp * n) <= s.hardware.domain_devices();
      double ct = 0;
      if (a2a) {
        const auto& l = in_domain ? s.hardware.scale_up.nvlink : s.hardware.network.nic;
        const double bw = in_domain ? s.hardware.scale_up.device_Bps(n - 1) : l.goodput_Bps;
        ct = n > 1 ? l.latency_s + seg.collective_bytes * double(n - 1) / double(n) / bw : 0.0;
      } else if (n > 1) {
        collectives::GroupShape shape;
        shape.ranks = n;
        shape.nodes = in_domain ? 1 : n;
        shape.nvswitch_generation = fabric.nvswitch_generation;
        shape.nvls_enabled = fabric.nvls_enabled;
        shape.nccl_version = fabric.nccl_version;
        shape.nvlink_Bps = fabric.full_mesh && in_domain ? fabric.nvlink_Bps * double(n - 1) : fabric.nvlink_Bps;
        shape.nic_Bps = fabric.nic_Bps;
        ct = collectives::choose(collectives::kind_of(seg.collective), seg.collective_bytes, shape, fabric.choice)
                 .time_s;
      }
      if (!seg.beside_next)  // beside the kernels after it: their time, not added (the replay adds contention)
        pt.collectives_s += ct;
      std::snprintf(line, sizeof line, "  %-24s %-26s %10s %10.2f %8.1f\n", model::to_string(seg.collective),
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
      std::string shape = "-";
      double eff = 0;
      if (op.kind == model::Op::Kind::Gemm) {
        char b[64];
        std::snprintf(b, sizeof b, "%gx%gx%gx%g", op.batch, op.m, op.n, op.k);
        shape = b;
        eff = op.flops() / t / cm.peak_flops();
      }
      std::snprintf(line, sizeof line, "  %-24s %-26s %10.2f %10.2f %8.1f %9.1f%%\n", op.name.c_str(), shape.c_str(),
                    op.flops() / 1e9, op.bytes / 1e6, t * 1e6, 100 * eff);
      out << line;
    }
  }
  return pt;
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
  char head[256];
  std::snprintf(head, sizeof head, "  %-24s %-26s %10s %10s %8s %10s\n", "kernel", "shape (batch x m x n x k)",
                "GFLOP", "MB", "us", "of peak");
  out << head;
  auto layer = t.layer(shape);
  PassTime fwd = print_pass(out, "layer forward", layer.forward, cm, s, g);
  PassTime bwd = print_pass(out, "layer backward", layer.backward, cm, s, g);
  print_pass(out, "embedding forward", t.embedding(shape).forward, cm, s, g);
  print_pass(out, "head forward", t.head(shape).forward, cm, s, g);
  print_pass(out, "head backward", t.head(shape).backward, cm, s, g);
  double recompute = 0;
  if (s.training.recompute == scenario::Recompute::Full)
    recompute = fwd.total();
  else if (s.training.recompute == scenario::Recompute::Selective)
    for (const auto& op : layer.selective_recompute)
      recompute += cm.seconds(op);
  // A rank's share of the layer: its tensor-parallel slice of its context-parallel part of the sequence.
  double flops = plan.layer_forward_flops / double(g.tp * g.cp);
  char line[512];
  std::snprintf(line, sizeof line,
                "\none layer, one microbatch (collectives at their uncontended alpha-beta time; those beside the next "
                "kernels not added):\n"
                "  forward   %8.3f ms = kernels %.3f + tensor-parallel collectives %.3f (kernels at %.1f%% of peak)\n"
                "  backward  %8.3f ms = kernels %.3f + tensor-parallel collectives %.3f (kernels at %.1f%% of peak)\n"
                "  recompute %8.3f ms (%s)\n"
                "  total     %8.3f ms\n",
                fwd.total() * 1e3, fwd.kernels_s * 1e3, fwd.collectives_s * 1e3,
                100 * flops / fwd.kernels_s / cm.peak_flops(), bwd.total() * 1e3, bwd.kernels_s * 1e3,
                bwd.collectives_s * 1e3, 100 * 2 * flops / bwd.kernels_s / cm.peak_flops(), recompute * 1e3,
                scenario::to_string(s.training.recompute), (fwd.total() + bwd.total() + recompute) * 1e3);
  out << line;
}

}  // namespace dtsim::report
