#include "replay/overlap_group.hpp"

namespace dtsim::replay {

bool overlap_group_end(const std::vector<Step>& steps, size_t at, bool tp_overlap, int64_t cp, size_t& end)
{
  auto compute = [&](size_t k) { return k < steps.size() && steps[k].kind == Step::Kind::Compute; };
  // A collective issued asynchronously beside the kernels after it (a column-parallel layer's backward gather and
  // reduce-scatter, model::Segment::beside_next), with or without tp_overlap.
  if (at < steps.size() && steps[at].kind == Step::Kind::TpCollective && steps[at].beside_next && compute(at + 1)) {
    end = at + 2;
    return true;
  }
  if (!tp_overlap && cp == 1)  // nothing overlaps: the common case, decided at once
    return false;
  size_t i = at;
  auto is = [&](size_t k, model::TpCollective c) {
    return k < steps.size() && steps[k].kind == Step::Kind::TpCollective && steps[k].collective == c;
  };
  // Context parallel: the ring before the attention it feeds (forward), after the attention whose gradients it
  // carries (backward); overlapped, as Megatron-LM's ring attention does, unless blocking (run_step waits for it).
  auto ring = [&](size_t k, model::TpCollective c) {
    return k < steps.size() && steps[k].kind == Step::Kind::CpRing && steps[k].collective == c &&
           !steps[k].blocking;
  };
  if ((ring(i, model::TpCollective::ContextGather) && compute(i + 1)) ||
      (compute(i) && ring(i + 1, model::TpCollective::ContextGatherReduce))) {
    end = i + 2;
    return true;
  }
  if (!tp_overlap)
    return false;
  // An all-gather overlaps the compute step that consumes it, a reduce-scatter the one that produces it.
  if (is(i, model::TpCollective::AllGather) && compute(i + 1))
    i += 2;
  else if (compute(i) && is(i + 1, model::TpCollective::ReduceScatter))
    i += 1;
  else
    return false;
  if (is(i, model::TpCollective::ReduceScatter))
    ++i;
  end = i;
  return true;
}

}  // namespace dtsim::replay
