#include "parallel/deferred_gradients.hpp"

#include <stdexcept>

namespace dtsim::parallel {

namespace {

bool makes_weight_gradients(const scenario::StageUnit& u)
{
  return u.backward && u.part != scenario::BackwardPart::Input;
}

bool makes_input_gradients(const scenario::StageUnit& u)
{
  return u.backward && u.part != scenario::BackwardPart::Weight;
}

}  // namespace

DeferredGradientPeak deferred_gradient_peak(const std::vector<scenario::StageUnit>& order, int64_t chunks,
                                            double microbatch_bytes, const std::vector<double>& chunk_gradient_bytes,
                                            const std::vector<double>& chunk_bytes_kept_per_backward)
{
  if (chunks < 1 || chunk_gradient_bytes.size() != size_t(chunks))
    throw std::logic_error("deferred_gradient_peak: one gradient size per chunk expected");
  if (!chunk_bytes_kept_per_backward.empty() && chunk_bytes_kept_per_backward.size() != size_t(chunks))
    throw std::logic_error("deferred_gradient_peak: one kept size per chunk expected");
  // Where each chunk's first and last weight-gradient passes fall in the order.
  std::vector<int64_t> first(size_t(chunks), -1), last(size_t(chunks), -1);
  for (size_t i = 0; i < order.size(); ++i) {
    const auto& u = order[i];
    if (u.chunk < 0 || u.chunk >= chunks)
      throw std::logic_error("deferred_gradient_peak: a unit's chunk is out of range");
    if (!makes_weight_gradients(u))
      continue;
    auto c = size_t(u.chunk);
    if (first[c] < 0)
      first[c] = int64_t(i);
    last[c] = int64_t(i);
  }
  DeferredGradientPeak best;
  best.chunk_holds.assign(size_t(chunks), false);
  best.chunk_reduced.assign(size_t(chunks), false);
  double best_bytes = -1;
  int64_t live = 0;
  double kept = 0;  // what the backwards run so far keep to the step's end
  for (size_t i = 0; i < order.size(); ++i) {
    const auto& u = order[i];
    if (!u.backward)
      ++live;
    // During unit i: its microbatch still in flight, the gradients of every chunk between its first and last pass.
    double bytes = double(live) * microbatch_bytes + kept;
    std::vector<bool> holds(size_t(chunks), false), reduced(size_t(chunks), false);
    for (size_t c = 0; c < size_t(chunks); ++c) {
      holds[c] = first[c] >= 0 && first[c] <= int64_t(i) && int64_t(i) <= last[c];
      reduced[c] = last[c] >= 0 && last[c] < int64_t(i);
      if (holds[c])
        bytes += chunk_gradient_bytes[c];
    }
    if (bytes > best_bytes) {
      best_bytes = bytes;
      best.in_flight = live;
      best.chunk_holds = holds;
      best.chunk_reduced = reduced;
      best.kept_after_backward_bytes = kept;
    }
    if (makes_weight_gradients(u))
      --live;
    if (makes_input_gradients(u) && !chunk_bytes_kept_per_backward.empty())
      kept += chunk_bytes_kept_per_backward[size_t(u.chunk)];
  }
  return best;
}

}  // namespace dtsim::parallel
