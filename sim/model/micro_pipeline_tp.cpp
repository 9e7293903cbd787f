#include "model/micro_pipeline_tp.hpp"

#include <utility>

namespace dtsim::model {

namespace {

bool plain(const Segment& seg, TpCollective c)
{
  return seg.is_collective() && seg.collective == c && !seg.beside_next && !seg.blocking;
}

bool linear_gemm(const Op& op) { return op.kind == Op::Kind::Gemm && op.linear; }

// `share` of a GEMM's rows (the chunks of its tokens the fused op computes), its bytes in proportion.
Op rows(const Op& gemm, double share, const char* suffix)
{
  Op o = gemm;
  o.name += suffix;
  o.m *= share;
  o.bytes *= share;
  return o;
}

Op memory_kernel(std::string name, double bytes)
{
  Op o;
  o.name = std::move(name);
  o.bytes = bytes;
  return o;
}

}  // namespace

void fuse_micro_pipeline_tp(std::vector<Segment>& pass, int64_t tp, bool forward)
{
  if (tp <= 1)
    return;
  const double t = double(tp);
  std::vector<Segment> out;
  for (size_t i = 0; i < pass.size(); ++i) {
    const Segment& seg = pass[i];
    if (plain(seg, TpCollective::AllGather) && i + 1 < pass.size() && !pass[i + 1].is_collective()) {
      const auto& next = pass[i + 1].ops;
      size_t g = 0;
      while (g < next.size() && !linear_gemm(next[g]))
        ++g;
      if (g < next.size()) {
        // The kernels before the GEMM (its input's fp8 cast), then the shard's copy into the symmetric buffer.
        std::vector<Op> before(next.begin(), next.begin() + std::ptrdiff_t(g));
        before.push_back(memory_kernel(next[g].name + ".symm_copy", 2 * seg.collective_bytes / t));
        append_kernels(out, std::move(before));
        append_beside(out, TpCollective::AllGather, seg.collective_bytes, {rows(next[g], (t - 1) / t, "")}, true);
        std::vector<Op> after{rows(next[g], 1 / t, ".last_chunk")};
        after.insert(after.end(), next.begin() + std::ptrdiff_t(g) + 1, next.end());
        out.push_back(Segment{std::move(after), TpCollective::None, 0});
        ++i;
        continue;
      }
    }
    if (forward && plain(seg, TpCollective::ReduceScatter) && !out.empty() && !out.back().is_collective() &&
        linear_gemm(out.back().ops.back())) {
      const Op producer = out.back().ops.back();
      out.back().ops.back() = rows(producer, 1 / t, ".first_chunk");
      append_beside(out, TpCollective::ReduceScatter, seg.collective_bytes, {rows(producer, (t - 1) / t, "")},
                    true);
      // reduce_fn over the stacked partials: every rank's partial of the rank's rows read, the sum written.
      out.push_back(Segment{{memory_kernel(producer.name + ".reduce_partials", seg.collective_bytes * (1 + 1 / t))},
                            TpCollective::None, 0});
      continue;
    }
    if (seg.is_collective())
      out.push_back(seg);
    else
      append_kernels(out, seg.ops);  // after a rewritten group the run goes on, unless a collective holds it
  }
  pass = std::move(out);
}

}  // namespace dtsim::model
