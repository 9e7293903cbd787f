#include "report/explain.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "kernels/compute_model.hpp"
#include "model/transformer.hpp"
#include "parallel/all_to_all.hpp"
#include "parallel/collective.hpp"
#include "parallel/plan.hpp"
#include "scenario/job_segment.hpp"

namespace dtsim::report {

namespace {

// A pass's kernels and the collectives it waits for, by the kind of group each runs in.
struct PassTime {
  double kernels_s = 0, tensor_parallel_s = 0, expert_all_to_all_s = 0, context_ring_s = 0;
  bool tensor_parallel = false, expert_all_to_alls = false, context_rings = false;  ///< the pass has some
  double total() const { return kernels_s + tensor_parallel_s + expert_all_to_all_s + context_ring_s; }
};

// "kernels K[ + tensor-parallel collectives T][ + expert all-to-alls E][ + context-parallel rings C]", in ms: each
// kind of collective under its own name, those of a kind the pass does not run (tp 1: no tensor-parallel ones) left
// out.
std::string pass_terms(const PassTime& pt)
{
  char b[256];
  std::snprintf(b, sizeof b, "kernels %.3f", pt.kernels_s * 1e3);
  std::string out = b;
  if (pt.tensor_parallel) {
    std::snprintf(b, sizeof b, " + tensor-parallel collectives %.3f", pt.tensor_parallel_s * 1e3);
    out += b;
  }
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
// kernels above are of. `selective_ops` is the layer's selective recomputation: none under fused attention, which
// keeps no score matrix (its backward recomputes the scores, a row of the backward above).
std::string recompute_scope(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan, bool selective_ops)
{
  const int64_t layers = plan.stage_layers(0), recomputed = plan.stage_recomputed_layers(0);
  const std::string of_stage = " of the " + std::to_string(layers) + " layers of stage 0";
  switch (s.training.recompute) {
    case scenario::Recompute::None:
      return "none";
    case scenario::Recompute::Selective:
      if (!selective_ops)
        return "selective: nothing to re-run under fused attention, which keeps no score matrix; its backward "
               "recomputes the scores";
      return "selective: each layer's attention core, in all " + std::to_string(layers) + " layers of stage 0";
    case scenario::Recompute::Full:
      break;
  }
  if (s.training.recompute_layers == 0)
    return "full: all " + std::to_string(layers) + " layers of stage 0";
  const std::string rest = " by training.recompute_layers; the others keep their activations";
  const int64_t chunks = plan.groups.vpp;
  if (chunks == 1)
    return "full: the first " + std::to_string(recomputed) + of_stage + rest;
  return "full: " + std::to_string(recomputed) + of_stage + ", the first " +
         std::to_string(s.training.recompute_layers) + " of each of its " + std::to_string(chunks) + " chunks" + rest;
}

// One row of the kernel table: a kernel with its shape, or a collective with its group in the shape column (and
// no FLOPs or share of peak).
struct KernelRow {
  std::string name, shape;
  double gflop = 0, mb = 0, us = 0;
  std::string of_peak;
  bool collective = false;
};

// A pass's rows under its title, and its time by kind.
struct Pass {
  std::string title;
  std::vector<KernelRow> rows;
  PassTime time;
};

// Collective times are the simulation's own rules on the groups of the first rank (stage 0, data-parallel index 0,
// tensor-parallel rank 0), on uncontended links (the replay adds contention): NCCL's predicted time of the collective
// the replay runs, on the group's shape with the switch tiers' latency (collectives::collective_time), and the expert
// all-to-all at its best case with its token dispatcher's scale (collectives::expert_all_to_all_time), as the
// search's bound prices them.
Pass explain_pass(const char* title, const std::vector<model::Segment>& segs, const kernels::ComputeModel& cm,
                  const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan)
{
  Pass pass;
  pass.title = title;
  PassTime& pt = pass.time;
  const auto fabric = collectives::fabric_of(s);
  for (const auto& seg : segs) {
    if (seg.is_collective()) {
      const bool a2a = seg.collective == model::TpCollective::AllToAll;
      const bool ring = seg.collective == model::TpCollective::ContextGather ||
                        seg.collective == model::TpCollective::ContextGatherReduce;
      const std::vector<int64_t> group = a2a ? plan.ep_group(0, 0, 0) : ring ? plan.cp_group(0, 0, 0)
                                                                           : plan.tp_group(0, 0);
      const double ct =
          a2a ? collectives::expert_all_to_all_time(seg.collective_bytes, group, plan.placement, fabric, s.model,
                                                    plan.comm.moe_dispatcher)
              : collectives::collective_time(collectives::kind_of(seg.collective), seg.collective_bytes, group,
                                             plan.placement, fabric);
      if (!seg.beside_next)  // beside the kernels after it: their time, not added (the replay adds contention)
        (a2a ? pt.expert_all_to_all_s : ring ? pt.context_ring_s : pt.tensor_parallel_s) += ct;
      pt.expert_all_to_alls = pt.expert_all_to_alls || a2a;
      pt.context_rings = pt.context_rings || ring;
      pt.tensor_parallel = pt.tensor_parallel || (!a2a && !ring);
      KernelRow row;
      row.name = model::to_string(seg.collective);
      row.shape = a2a               ? "(expert-parallel group)"
                  : ring            ? "(context-parallel ring)"
                  : seg.beside_next ? "(TP group, beside next)"
                                    : "(tensor-parallel group)";
      row.mb = seg.collective_bytes / 1e6;
      row.us = ct * 1e6;
      row.collective = true;
      pass.rows.push_back(row);
      continue;
    }
    for (const auto& op : seg.ops) {
      const double t = cm.seconds(op);
      pt.kernels_s += t;
      KernelRow row;
      row.name = op.name;
      row.shape = row.of_peak = "-";  // of peak: GEMMs only
      if (op.kind == model::Op::Kind::Gemm) {
        char b[64];
        std::snprintf(b, sizeof b, "%gx%gx%gx%g", op.batch, op.m, op.n, op.k);
        row.shape = b;
        std::snprintf(b, sizeof b, "%.1f%%", 100 * op.flops() / t / cm.peak_flops(op));
        row.of_peak = b;
      }
      row.gflop = op.flops() / 1e9;
      row.mb = op.bytes / 1e6;
      row.us = t * 1e6;
      pass.rows.push_back(row);
    }
  }
  return pass;
}

// The passes as one table, its name and shape columns as wide as their longest entry (MoE, micro-pipeline and
// block-scaling kernel names run past 30 characters), so every row keeps its columns.
void print_table(std::ostream& out, const std::vector<Pass>& passes, const std::string& peak_note)
{
  const char* name_head = "kernel";
  const char* shape_head = "shape (batch x m x n x k)";
  size_t name_w = std::strlen(name_head), shape_w = std::strlen(shape_head);
  for (const auto& pass : passes)
    for (const auto& row : pass.rows) {
      name_w = std::max(name_w, row.name.size());
      shape_w = std::max(shape_w, row.shape.size());
    }
  const int nw = int(name_w), sw = int(shape_w);
  char line[512];
  std::snprintf(line, sizeof line, "  %-*s %-*s %10s %10s %8s %10s\n", nw, name_head, sw, shape_head, "GFLOP", "MB",
                "us", "of peak");
  out << line << peak_note;
  for (const auto& pass : passes) {
    out << pass.title << "\n";
    for (const auto& row : pass.rows) {
      if (row.collective)
        std::snprintf(line, sizeof line, "  %-*s %-*s %10s %10.2f %8.1f\n", nw, row.name.c_str(), sw,
                      row.shape.c_str(), "", row.mb, row.us);
      else
        std::snprintf(line, sizeof line, "  %-*s %-*s %10.2f %10.2f %8.1f %10s\n", nw, row.name.c_str(), sw,
                      row.shape.c_str(), row.gflop, row.mb, row.us, row.of_peak.c_str());
      out << line;
    }
  }
}

}  // namespace

void print_explain(std::ostream& out, const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan)
{
  model::Transformer t(s.model);
  kernels::ComputeModel cm(s.hardware.device, plan.precision.name, s.stack);
  const model::Shape& shape = plan.shape;
  const auto& g = plan.groups;
  out << "Kernels of one microbatch on one " << (g.tp > 1 ? "tensor-parallel rank" : "device") << " ("
      << s.model.name << ", micro batch " << shape.micro_batch << ", sequence " << shape.seq << ", tp " << g.tp
      << (shape.sp ? ", sp" : "") << ", " << plan.precision.name << " on " << s.hardware.device.name << ")\n";
  if (s.hardware.scale_up.from_section)  // a DGX-style node is its own domain
    out << "  NVLink domain of " << s.hardware.domain_devices() << " devices (" << s.hardware.scale_up.nodes
        << " nodes of " << s.hardware.node.devices << scenario::segment_note(s)
        << "): collectives of groups inside it run on NVLink\n";
  if (const auto straddling = parallel::tp_straddling_note(plan.placement); !straddling.empty())
    out << "  " << straddling << "\n";
  std::string peak_note;
  if (cm.mixed_peaks())
    peak_note = "  (of peak: the linear layers' GEMMs against the " + plan.precision.name +
                " peak, the other GEMMs against the bf16 peak)\n";
  auto layer = t.layer(shape);
  const std::vector<Pass> passes = {explain_pass("layer forward", layer.forward, cm, s, plan),
                                    explain_pass("layer backward", layer.backward, cm, s, plan),
                                    explain_pass("embedding forward", t.embedding(shape).forward, cm, s, plan),
                                    explain_pass("head forward", t.head(shape).forward, cm, s, plan),
                                    explain_pass("head backward", t.head(shape).backward, cm, s, plan)};
  print_table(out, passes, peak_note);
  const PassTime& fwd = passes[0].time;
  const PassTime& bwd = passes[1].time;
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
  // What the collectives' terms are, or that a layer has none (tp 1, cp 1 and no expert all-to-all).
  const bool collectives = fwd.tensor_parallel || fwd.expert_all_to_alls || fwd.context_rings ||
                           bwd.tensor_parallel || bwd.expert_all_to_alls || bwd.context_rings;
  const std::string about =
      collectives ? "collectives at NCCL's uncontended time on the replay's groups; those beside the next kernels not "
                    "added"
                  : "kernels only: at tp " + std::to_string(g.tp) + (s.model.moe() ? ", cp " : " and cp ") +
                        std::to_string(g.cp) + (s.model.moe() ? " and ep " + std::to_string(g.ep) : std::string()) +
                        " a layer runs no collectives";
  char line[1024];
  std::snprintf(line, sizeof line,
                "\none layer, one microbatch (%s):\n"
                "  forward   %8.3f ms = %s (kernels at %.1f%% of the %s peak)\n"
                "  backward  %8.3f ms = %s (kernels at %.1f%% of the %s peak)\n"
                "  recompute %8.3f ms (%s)\n"
                "  total     %8.3f ms%s\n",
                about.c_str(), fwd.total() * 1e3, pass_terms(fwd).c_str(),
                100 * flops / fwd.kernels_s / cm.peak_flops(), plan.precision.name.c_str(), bwd.total() * 1e3,
                pass_terms(bwd).c_str(), 100 * 2 * flops / bwd.kernels_s / cm.peak_flops(),
                plan.precision.name.c_str(), recompute * 1e3,
                recompute_scope(s, plan, !layer.selective_recompute.empty()).c_str(),
                (fwd.total() + bwd.total() + recompute) * 1e3, not_recomputed.c_str());
  out << line;
}

}  // namespace dtsim::report
