#pragma once
/// Collectives as a few phases of concurrent flows, one flow per ring edge, plus each phase's latency term:
/// the bandwidth term then comes out of the platform's links (and their contention), and the latency term
/// (steps - 1) * alpha is a delay in front of the flows (the flows pay the last alpha themselves).
/// Ring within a group; hierarchical across nodes (NCCL-style): reduce-scatter inside each node over NVLink,
/// all-reduce across nodes over the NICs (one ring per local rank), all-gather inside each node.
#include <cstdint>
#include <vector>

#include "model/ops.hpp"
#include "parallel/placement.hpp"

namespace dtsim::collectives {

/// AllToAll: every rank sends bytes / n to every other rank at once (NCCL's grouped sends and receives), one
/// phase of n (n - 1) flows; `bytes` is what one rank holds before the exchange, its own share included.
enum class Kind { AllReduce, ReduceScatter, AllGather, AllToAll };

/// The collective a layer's collective runs as. The context-parallel ring moves an all-gather's traffic in forward
/// (ContextGather) and an all-reduce's in backward (ContextGatherReduce), see model/ops.hpp.
Kind kind_of(model::TpCollective c);

struct Flow {
  int64_t src = 0, dst = 0;  ///< device indices
  double bytes = 0;
};

struct Phase {
  int64_t steps = 0;        ///< ring steps; latency term is (steps - 1) * link latency before the flows
  bool inter_node = false;  ///< whether the flows cross the NICs (else NVLink)
  std::vector<Flow> flows;
};

/// Phases of a collective of `bytes` (the whole tensor) over `group` (devices in ring order). AllToAll only:
/// `inter_node_scale` multiplies the bytes of the flows between nodes (node-limited expert routing,
/// model/node_limited_routing.hpp).
std::vector<Phase> plan_collective(Kind kind, double bytes, const std::vector<int64_t>& group,
                                   const parallel::Placement& placement, double inter_node_scale = 1.0);

/// Alpha-beta time of a ring collective on an uncontended ring: steps * alpha + volume / beta
/// (all-reduce: 2(n-1) steps, 2(n-1)/n * S per rank; reduce-scatter or all-gather: half of that).
double ring_time(Kind kind, double bytes, int64_t n, double alpha_s, double beta_Bps);

}  // namespace dtsim::collectives
