#pragma once
/// The per-rank plan a scenario implies, derived once (app/simulate.cpp, report/explain.cpp) and read by the memory
/// estimate, the step program, the wafer program and the replay instead of each re-deriving it from the scenario:
/// the precision and its byte sizes, the shape of one microbatch on one rank, the schedule's registry entry, where
/// each rank sits and the parallel groups it belongs to, how communication overlaps, the layers of each model chunk
/// and the model FLOPs of a step.
#include <cstdint>
#include <vector>

#include "model/transformer.hpp"
#include "parallel/placement.hpp"
#include "parallel/precision.hpp"
#include "scenario/scenario_spec.hpp"
#include "scenario/schedule_registry.hpp"

namespace dtsim::parallel {

/// Sizes of the groups a rank belongs to (see placement.hpp for where their ranks sit).
struct ParallelGroups {
  int64_t tp = 1;  ///< tensor-parallel group: splits each layer's matrices
  int64_t cp = 1;  ///< context-parallel ring: splits each sequence
  int64_t ep = 1;  ///< expert-parallel group: splits each layer's experts, exchanges tokens by all-to-all
  int64_t expert_tp = 1;  ///< splits each expert's matrices: tp, or 1 (parallel.expert_tp)
  int64_t dp = 1;  ///< data-parallel replicas (parallel.dp)
  /// Pipeline stages, model chunks per stage: parallel.vpp, or 2 under a schedule fed from both ends (DualPipe:
  /// each stage holds its own layers and a copy of those of stage pp - 1 - i).
  int64_t pp = 1, vpp = 1;
  /// Ranks sharing (reducing, and under ZeRO sharding) a non-expert parameter: dp * cp, as in Megatron-Core.
  int64_t dense_dp = 1;
  /// Ranks sharing an expert parameter: the expert-parallel ranks are carved out of the dp * cp ranks (of the
  /// tp * dp * cp ranks with experts whole).
  int64_t expert_dp = 1;
  /// Experts whole on every rank of a TP group of more than one: the expert groups span the TP ranks.
  bool experts_across_tp() const { return tp > 1 && expert_tp == 1; }
  /// Ranks of a stage over which the expert-parallel groups are carved: dp * cp, or tp * dp * cp with experts whole.
  int64_t expert_ranks() const { return dense_dp * (tp / expert_tp); }
};

/// How the step's communication overlaps the compute and is sharded: the scenario's parallel section, with the
/// schedule's defaults applied.
struct CommunicationPlan {
  bool dp_overlap = true;   ///< gradients reduced in buckets during the backward
  bool pp_overlap = false;  ///< asynchronous pipeline sends and receives (false: batched between groups of units)
  bool tp_overlap = false;  ///< tensor-parallel collectives beside the GEMMs next to them
  /// Units the schedule pairs (StageUnit::beside_previous) run as pairs: parallel.ep_overlap, or the schedule's
  /// default.
  bool pairs = false;
  /// ZeRO 1 and 2: the updated parameters are gathered during the next step's first forward.
  bool param_gather_overlap = false;
  /// ZeRO 3: false, a layer's parameters stay gathered from its forward to its backward (no backward gathers).
  bool reshard_after_forward = true;
  /// ZeRO 2 and 3: gradients reduce-scattered after the last microbatch only.
  bool defer_gradient_sync = false;
  /// The expert all-to-all's token dispatcher (parallel.moe_dispatcher): how many times a token crosses the network.
  model::TokenDispatcher moe_dispatcher = model::TokenDispatcher::AllToAll;
  int zero = 0;                  ///< ZeRO stage over the data-parallel group
  /// ZeRO 1 and 2: each gradient bucket all-reduced, the rank keeping its shard (stack kernels.zero_gradients).
  bool zero_gradients_all_reduce = false;
  double dp_bucket_bytes = 0;    ///< gradient bucket size
};

struct DerivedPlan {
  Precision precision;
  /// One microbatch on one tensor-parallel rank. Wafer-scale hardware runs each unit whole (tp, cp and ep are 1
  /// there, checked when the scenario is loaded).
  model::Shape shape;
  ParallelGroups groups;
  /// Where each rank sits: dp * cp data-parallel indices (the cp ranks inside them, dp' = dp * cp + c, Megatron's
  /// tp-cp-dp order), tp, pp.
  Placement placement{1, 1, 1, 1};
  /// The schedule's registry entry.
  const scenario::ScheduleDef* schedule = nullptr;
  CommunicationPlan comm;
  int64_t tokens_per_microbatch = 0;  ///< micro_batch * seq_len: whole sequences
  int64_t tokens_per_rank = 0;        ///< of those, the ones one context-parallel rank holds: / cp
  double microbatches_per_step = 0;   ///< global_batch / micro_batch: over all data-parallel replicas
  /// Per virtual stage (model chunk), indexed by chunk * pp + stage: its layers, the first of them, and how many of
  /// them are recomputed in full (scenario/layer_partition.hpp).
  std::vector<int64_t> chunk_layers, chunk_first_layer, chunk_recomputed_layers;
  double layer_forward_flops = 0;   ///< one layer, one microbatch, all tensor-parallel ranks together
  double dense_layer_forward_flops = 0;  ///< the same for a dense first layer of a model with experts (else 0)
  double model_flops_per_step = 0;  ///< whole step, all devices, recomputation not counted (Narayanan et al. 2021)

  /// Chunks fed from both ends (scenario::ScheduleDef::two_directions).
  bool two_directions = false;
  /// Where each chunk's layers sit (scenario::ScheduleDef::chunk_placement).
  scenario::ChunkPlacement chunk_placement = scenario::ChunkPlacement::Looped;
  /// The index into the chunk vectors (the layer partition, in the model's order) of the layers `chunk` of `stage`
  /// holds: chunk * pp + stage for interleaving, stage or 2 pp - 1 - stage in a V.
  int64_t partition_index(int64_t stage, int64_t chunk) const
  {
    if (two_directions)
      return chunk == 0 ? stage : groups.pp - 1 - stage;
    if (chunk_placement == scenario::ChunkPlacement::V)
      return chunk == 0 ? stage : 2 * groups.pp - 1 - stage;
    return chunk * groups.pp + stage;
  }
  /// Whether `stage` holds the first layers (the embedding) or the last (the output layer) in one of its chunks: in
  /// a V the first stage holds both.
  bool holds_embedding(int64_t stage) const { return stage == 0 || (two_directions && stage == groups.pp - 1); }
  bool holds_head(int64_t stage) const
  {
    if (chunk_placement == scenario::ChunkPlacement::V)
      return stage == 0;
    return stage == groups.pp - 1 || (two_directions && stage == 0);
  }
  /// The output layer sits on the stage of the embedding, which ties its weights without a copy: a V.
  bool head_beside_embedding() const { return chunk_placement == scenario::ChunkPlacement::V; }
  /// Layers one device of `stage` holds, over all its chunks.
  int64_t stage_layers(int64_t stage) const;
  /// Of those, the ones recomputed in full.
  int64_t stage_recomputed_layers(int64_t stage) const;
  /// Of those, the dense first layers of a model with experts (first_k_dense_replace); 0 for other models.
  int64_t stage_dense_layers(int64_t stage, const model::ModelSpec& m) const;

  // ---- the groups of the rank (stage, dp, tp), as device numbers (placement) -----------------------------------
  std::vector<int64_t> tp_group(int64_t stage, int64_t dp) const { return placement.tp_group(stage, dp); }
  /// The dp * cp ranks sharing the rank's non-expert parameters.
  std::vector<int64_t> dp_group(int64_t stage, int64_t tp) const { return placement.dp_group(stage, tp); }
  StridedGroup dp_ranks(int64_t stage, int64_t tp) const { return placement.dp_ranks(stage, tp); }
  /// The context-parallel ring: cp consecutive data-parallel indices.
  std::vector<int64_t> cp_group(int64_t stage, int64_t dp, int64_t tp) const
  {
    return placement.rank_group(stage, dp, tp, groups.cp);
  }
  /// The expert-parallel group, and the ranks holding the same experts (their gradients are reduced together).
  std::vector<int64_t> ep_group(int64_t stage, int64_t dp, int64_t tp) const;
  std::vector<int64_t> expert_dp_group(int64_t stage, int64_t dp, int64_t tp) const;
  /// Every expert-data-parallel group of a stage (all TP ranks).
  std::vector<std::vector<int64_t>> expert_dp_groups(int64_t stage) const;
  /// The rank's index among the stage's expert ranks (its data-parallel index, or TP ranks first when the groups
  /// span them): ep_group takes ep consecutive ones, expert_dp_group every ep-th.
  int64_t expert_rank(const Coord& c) const { return groups.experts_across_tp() ? c.dp * groups.tp + c.tp : c.dp; }
  /// Data-parallel indices from one expert-parallel group to the next: ep, or ep / tp when the groups span TP ranks.
  int64_t ep_dp_step() const { return groups.experts_across_tp() ? groups.ep / groups.tp : groups.ep; }
  /// The index, within its stage, of the rank's expert-data-parallel group (the ranks holding its experts).
  int64_t expert_dp_index(const Coord& c) const
  {
    return groups.experts_across_tp() ? expert_rank(c) % groups.ep : c.tp * groups.ep + c.dp % groups.ep;
  }
};

/// The plan of a loaded (checked) scenario.
DerivedPlan derive_plan(const scenario::ScenarioSpec& s);

}  // namespace dtsim::parallel
