#include "report/explain.hpp"

#include <cstdio>
#include <ostream>

#include "hardware/compute_model.hpp"
#include "model/transformer.hpp"

namespace dtsim::report {

namespace {

void print_pass(std::ostream& out, const char* title, const std::vector<model::Segment>& segs,
                const hardware::ComputeModel& cm, double& total_s)
{
  char line[256];
  out << title << "\n";
  for (const auto& seg : segs) {
    if (seg.is_collective()) {
      std::snprintf(line, sizeof line, "  %-24s %-26s %10s %10.2f\n", model::to_string(seg.collective),
                    "(tensor-parallel group)", "", seg.collective_bytes / 1e6);
      out << line;
      continue;
    }
    for (const auto& op : seg.ops) {
      double t = cm.seconds(op);
      total_s += t;
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
}

}  // namespace

void print_explain(std::ostream& out, const scenario::ScenarioSpec& s)
{
  model::Transformer t(s.model);
  hardware::ComputeModel cm(s.hardware.device, s.training.precision);
  const int elem = s.training.precision == "fp32" ? 4 : 2;
  model::Shape shape{s.training.micro_batch, s.training.seq_len, s.parallel.tp, s.parallel.sp, elem};
  out << "Kernels of one microbatch on one tensor-parallel rank (" << s.model.name << ", micro batch "
      << s.training.micro_batch << ", sequence " << s.training.seq_len << ", tp " << s.parallel.tp
      << (s.parallel.sp ? ", sp" : "") << ", " << s.training.precision << " on " << s.hardware.device.name << ")\n";
  char head[256];
  std::snprintf(head, sizeof head, "  %-24s %-26s %10s %10s %8s %10s\n", "kernel", "shape (batch x m x n x k)",
                "GFLOP", "MB", "us", "of peak");
  out << head;
  double fwd = 0, bwd = 0, other = 0;
  auto layer = t.layer(shape);
  print_pass(out, "layer forward", layer.forward, cm, fwd);
  print_pass(out, "layer backward", layer.backward, cm, bwd);
  print_pass(out, "embedding forward", t.embedding(shape).forward, cm, other);
  print_pass(out, "head forward", t.head(shape).forward, cm, other);
  print_pass(out, "head backward", t.head(shape).backward, cm, other);
  double flops = t.layer_forward_flops(s.training.micro_batch * s.training.seq_len, s.training.seq_len) /
                 double(s.parallel.tp);
  char line[256];
  std::snprintf(line, sizeof line,
                "\nlayer: forward %.3f ms, backward %.3f ms (kernels only); forward at %.1f%% of peak, backward at "
                "%.1f%%\n",
                fwd * 1e3, bwd * 1e3, 100 * flops / fwd / cm.peak_flops(), 100 * 2 * flops / bwd / cm.peak_flops());
  out << line;
}

}  // namespace dtsim::report
