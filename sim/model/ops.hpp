#pragma once
/// The operators of a transformer as the simulator sees them: GEMMs (FLOPs and shape) and memory-bound kernels
/// (bytes moved), grouped into segments separated by tensor-parallel collectives.
#include <cstdint>
#include <string>
#include <vector>
#include "model/ub_method.hpp"

namespace dtsim::model {

/// One kernel on one tensor-parallel rank. GEMM shape is (m x k) * (k x n), `batch` times.
struct Op {
  enum class Kind { Gemm, Memory };
  std::string name;
  Kind kind = Kind::Memory;
  double batch = 1, m = 0, n = 0, k = 0;  ///< GEMM only
  double bytes = 0;                       ///< memory traffic (GEMMs: operands and result)
  /// A linear layer's GEMM: under fp8 training (Transformer Engine) it runs on fp8 inputs at the fp8 peak; the
  /// attention core, the router and the logits stay 16-bit.
  bool linear = false;
  /// The weight-gradient GEMM (X^T dY) of a kernel with parameters: nothing downstream waits for it but the
  /// optimizer, so zero-bubble schedules run it apart from the input gradients (scenario::BackwardPart).
  bool weight_gradient = false;
  /// A GEMM of a fused attention kernel (FlashAttention, cuDNN): timed at the kernel's published throughput for its
  /// direction, sequence (`attn_seq`), head dimension and masking, not with the GEMM curve (kernels/attention_kernel).
  enum class Fused { None, AttentionForward, AttentionBackward };
  Fused fused = Fused::None;
  double attn_seq = 0, attn_head_dim = 0;
  bool causal = false;  ///< causal masking: the kernel does half of the counted FLOPs
  /// This kernel's share of the stack's per-layer host time (a layer pass's kernels share 1 between them; 0 elsewhere).
  double layer_share = 0;
  /// Expert GEMMs this op stands for that the host issues one launch each (a grouped linear layer's local experts,
  /// run as one batched GEMM on the device side): each costs the stack's `host.expert_gemm`. 0: one launch.
  double expert_gemms = 0;
  double flops() const { return kind == Kind::Gemm ? 2.0 * batch * m * n * k : 0.0; }
};

/// Collectives of a layer: over the TP group, except AllToAll, the mixture-of-experts token dispatch and combine
/// over the expert-parallel group, and the context-parallel ring of keys and values over the cp group
/// (ContextGather in forward: each rank's K and V go round the ring; ContextGatherReduce in backward: K and V go
/// round again and their gradients come back, an all-reduce's traffic). `None` marks Megatron's conjugate operators
/// that are the identity in one direction (the f operator's forward, the g operator's backward).
enum class TpCollective { None, AllReduce, ReduceScatter, AllGather, AllToAll, ContextGather, ContextGatherReduce };

/// A userbuffers layer's forward reduce-scatter, overlapped with the GEMM that produces it (Transformer Engine's
/// ub_cfg `method`, `num_sm`, `set_sm_margin`): the GEMM runs in `chunks` chunks of rows (0: not overlapped this way),
/// each chunk's share of the reduce-scatter sent once its GEMM chunk is done. `pipeline`: 4 chunks, the last share
/// after the whole GEMM, its kernels on `sms` SMs; `ring_exchange`: tp chunks, the rank's own chunk last and sent
/// nowhere, the sends on the copy engines (no SM). With `sm_margin` the GEMM runs on the device's other SMs for its
/// whole length (CommOverlapCore's `_math_sms`), else on all of them, giving `sms` up only while a pipelined
/// reduce-scatter runs.
struct UbPipelinedRs {
  UbMethod method = UbMethod::Pipeline;
  int chunks = 0;
  double sms = 0;
  bool sm_margin = false;
};

/// Either a run of kernels, or a collective between runs of kernels.
struct Segment {
  std::vector<Op> ops;                       ///< non-empty for a compute segment
  TpCollective collective = TpCollective::None;
  double collective_bytes = 0;               ///< full tensor size the collective works on
  /// A collective issued asynchronously that runs beside the next segment, which holds exactly the kernels it
  /// overlaps: a column-parallel layer's backward gather of its input beside its input-gradient GEMM, and the
  /// reduce-scatter of that gradient beside its weight-gradient GEMM (push_column_parallel_backward).
  bool beside_next = false;
  /// A context-parallel collective the device waits for before it goes on, overlapping nothing: torch.compile traces
  /// a functional collective with its wait right after it (torchtitan's context parallelism).
  bool blocking = false;
  /// A beside_next collective whose transfers are copies on the copy engines (PyTorch's symmetric-memory p2p
  /// copies): it takes no streaming multiprocessor from the kernels beside it.
  bool copy_engine = false;
  /// A reduce-scatter overlapped chunk by chunk with the GEMM that produces it (userbuffers; ub.chunks 0: not).
  UbPipelinedRs ub{};
  bool is_collective() const { return ops.empty(); }
};

const char* to_string(TpCollective c);

/// Appends kernels to a pass: into its last run of kernels unless that run is closed (it is the run a beside_next
/// collective holds: what follows waits for that collective) or the pass ends with a collective.
void append_kernels(std::vector<Segment>& pass, std::vector<Op> ops);

/// Appends a collective issued asynchronously beside the kernels that follow it (a beside_next collective and the
/// run it holds); `copy_engine`: its transfers are copy-engine copies that take no SMs (Segment::copy_engine).
void append_beside(std::vector<Segment>& pass, TpCollective c, double bytes, std::vector<Op> kernels,
                   bool copy_engine = false);

}  // namespace dtsim::model
