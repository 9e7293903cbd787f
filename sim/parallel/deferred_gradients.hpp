#pragma once
/// Gradients held chunk by chunk under FSDP2 with their reduction deferred to the last microbatch
/// (parallel.zero 3 with parallel.defer_gradient_sync), as torch.distributed.pipelining runs it: each model chunk of a
/// stage is its own FSDP module, its unsharded gradients are allocated by its first weight-gradient pass and
/// accumulated until its own last backward, which reduce-scatters and frees them (stage.py, backward_maybe_with_nosync;
/// the last backward is counted per stage object in every version read: _seen_bwd_chunks in 2024, the schedule's
/// backward_counter[stage_index] later). A stage whose order finishes every backward of one chunk before the first of
/// the next (interleaved 1F1B with microbatches = pp) never holds the gradients of all its chunks at once.
#include <cstdint>
#include <vector>

#include "scenario/schedule_registry.hpp"

namespace dtsim::parallel {

/// The moment of a stage's order that holds the most activations and unsharded gradients together.
struct DeferredGradientPeak {
  int64_t in_flight = 0;              ///< chunk-microbatches whose activations are held then
  std::vector<bool> chunk_holds;      ///< per chunk: its unsharded gradients exist then
  std::vector<bool> chunk_reduced;    ///< per chunk: its last backward has run (its gradients reduce-scattered)
  double kept_after_backward_bytes = 0;  ///< what the backwards run before then keep to the step's end
};

/// Walks `order` (one stage's units over `chunks` chunks): a chunk-microbatch is in flight from its forward until its
/// weight-gradient pass (or whole backward) has run, counted during that pass; a chunk holds gradients from its first
/// weight-gradient pass to its last, both included; each backward (or input-gradient pass) of chunk c run before the
/// unit keeps `chunk_bytes_kept_per_backward`[c] to the step's end (empty: nothing kept). Returns the moment that
/// maximises in_flight * `microbatch_bytes` + the held chunks' `chunk_gradient_bytes` + the kept bytes.
DeferredGradientPeak deferred_gradient_peak(const std::vector<scenario::StageUnit>& order, int64_t chunks,
                                            double microbatch_bytes, const std::vector<double>& chunk_gradient_bytes,
                                            const std::vector<double>& chunk_bytes_kept_per_backward = {});

}  // namespace dtsim::parallel
