#pragma once
/// PyTorch's async tensor parallelism (torchtitan's `enable_async_tensor_parallel`; stack key
/// `kernels.tp_overlap: torch-micro-pipeline`) on a layer's passes.
#include <cstdint>
#include <vector>

#include "model/ops.hpp"

namespace dtsim::model {

/// Rewrites a layer pass, assembled as without tp_overlap, the way Inductor's micro_pipeline_tp pass and the fused
/// ops of torch/distributed/_symmetric_memory run it (read in a late-2024 copy: torch 1963fc8 itself is not in the
/// stored sources; the mid-2024 and 2026 versions keep the same loops):
/// - an all-gather whose result feeds a linear GEMM (fuse_all_gather_matmul: the gathered tensor as a matmul's left
///   operand) becomes `fused_all_gather_matmul`: the rank's shard copied into its symmetric buffer and a barrier, not
///   overlapped ("we are giving up the chance to overlap mv and b"), then the GEMM in tp chunks of its rows while
///   the other ranks' shards are copied in; the chunks before the gather's fp8 cast are moved in front of it
///   (torchao casts before the gather). Modelled: the copy (2 x shard bytes), then the gather beside (tp - 1) / tp
///   of the GEMM, then its last chunk;
/// - in `forward` only, a reduce-scatter of the GEMM just before it (fuse_matmul_reduce_scatter: its input one
///   matmul's output with one user) becomes `fused_matmul_reduce_scatter`: the first chunk computed alone, each
///   later chunk beside the copy of the one before, then `reduce_fn` over the stacked partials (reads the whole
///   unreduced output, writes the rank's rows). In backward the reduce-scatters take a sum of input gradients (wq,
///   wk, wv; w1, w3), which the pass does not match: they stay as without tp_overlap.
/// The copies are `Tensor.copy_` of contiguous buffers, cudaMemcpyAsync on the copy engines: no SMs taken.
/// Passes over one rank (tp 1) and collectives beside their kernels already (beside_next) are left alone.
void fuse_micro_pipeline_tp(std::vector<Segment>& pass, int64_t tp, bool forward);

}  // namespace dtsim::model
