#pragma once
/// A pipeline schedule (scenario/schedule_registry.hpp lists them) as a dependency graph over work units. A unit is the
/// forward or backward pass of one model chunk on one microbatch (under a zero-bubble schedule, the backward's
/// input-gradient or weight-gradient part). Two kinds of edges: data edges (a unit needs
/// the activations or gradients another unit produced, possibly on another stage) and order edges (the order
/// in which one stage takes its units). Bubbles come out of replaying this graph, not out of a formula.
#include <cstdint>
#include <vector>

#include <boost/graph/compressed_sparse_row_graph.hpp>

#include "scenario/scenario_spec.hpp"
#include "scenario/schedule_registry.hpp"

namespace dtsim::parallel {

struct Unit {
  int64_t stage = 0;
  int64_t chunk = 0;       ///< model chunk on this stage (0 unless interleaved)
  int64_t microbatch = 0;
  bool backward = false;
  /// A backward unit's part: whole, or under a zero-bubble schedule its input (B) or weight (W) gradients.
  scenario::BackwardPart part = scenario::BackwardPart::Whole;
  /// Whether the unit produces the chunk's gradients (a whole backward or a W unit).
  bool makes_gradients() const { return backward && part != scenario::BackwardPart::Input; }
};

enum class EdgeKind { Data, Order };

struct Dependency {
  EdgeKind kind = EdgeKind::Data;
};

// Compressed sparse row: the units and edges in a few contiguous arrays, built once. An adjacency list allocated
// a vector per unit and every edge's property on its own (Boost 1.74 stored_edge_property), which made the
// schedule most of the memory a search's child process touches.
using ScheduleGraph = boost::compressed_sparse_row_graph<boost::directedS, Unit, Dependency>;
using UnitId = ScheduleGraph::vertex_descriptor;

struct PipelineSchedule {
  ScheduleGraph graph;
  std::vector<std::vector<UnitId>> order;  ///< per stage, its units in execution order
  /// Per stage, aligned with `order`: units with the same group number run back to back, and the stage's
  /// pipeline sends and receives happen between groups, in one batch (Megatron-LM's interleaved steady state
  /// pairs a forward with a backward; every other unit is a group of its own).
  std::vector<std::vector<int64_t>> group;
  /// Per stage, aligned with `order`: the unit runs beside the one before it (scenario::StageUnit::beside_previous).
  std::vector<std::vector<char>> beside_previous;
  /// Microbatches per direction: all of them, or half under a schedule fed from both ends (DualPipe), whose
  /// chunk c carries direction c's microbatches.
  int64_t stages = 1, chunks = 1, microbatches = 1;
  bool two_directions = false;
  /// Where each chunk's layers sit (scenario::ChunkPlacement): in loops, or in a V.
  scenario::ChunkPlacement placement = scenario::ChunkPlacement::Looped;
  /// Virtual stages form one chain, layers split into stages * chunks consecutive pieces: in loops chunk c of
  /// stage i is position c * stages + i, in a V chunk 0 is position i and chunk 1 position 2 stages - 1 - i (the
  /// last stage's two chunks are neighbours, and its hand-off stays on the stage). Or one chain per direction:
  /// chunk 0 of stage i is position i of the first, chunk 1 position stages - 1 - i of the second (numbered from
  /// `stages`).
  int64_t virtual_stage(int64_t stage, int64_t chunk) const
  {
    if (two_directions)
      return chunk == 0 ? stage : stages + (stages - 1 - stage);
    if (placement == scenario::ChunkPlacement::V)
      return chunk == 0 ? stage : 2 * stages - 1 - stage;
    return chunk * stages + stage;
  }
  int64_t virtual_stages() const { return stages * chunks; }
  /// Virtual stages per chain: a microbatch goes through one chain.
  int64_t chain_length() const { return two_directions ? stages : stages * chunks; }
};

/// Builds the schedule for `stages` pipeline stages, `chunks` model chunks per stage and `microbatches`
/// microbatches per step, each stage running its units in the order of the schedule's registry entry
/// (scenario/schedule_registry.hpp).
/// `times`: the passes' seconds, which a schedule list-scheduled on them reads (ScheduleDef::timed_stage_orders);
/// empty, or for any other schedule, the registry's order.
PipelineSchedule build_schedule(const std::string& schedule_name, int64_t stages, int64_t chunks,
                                int64_t microbatches, const scenario::PassTimes& times = {});

/// True when the graph has no cycle (a schedule that could deadlock would have one).
bool is_acyclic(const PipelineSchedule& s);

}  // namespace dtsim::parallel
