#pragma once
/// The per-rank plan a scenario implies, derived once (app/simulate.cpp, report/explain.cpp) and read by the memory
/// estimate, the step program and the wafer program instead of each re-deriving it from the scenario: the precision
/// and its byte sizes, the shape of one microbatch on one rank, the parallel groups, the layers of each model chunk
/// and the model FLOPs of a step.
#include <cstdint>
#include <vector>

#include "model/transformer.hpp"
#include "parallel/precision.hpp"
#include "scenario/scenario_spec.hpp"

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
};

struct DerivedPlan {
  Precision precision;
  /// One microbatch on one tensor-parallel rank. Wafer-scale hardware runs each unit whole (tp, cp and ep are 1
  /// there, checked when the scenario is loaded).
  model::Shape shape;
  ParallelGroups groups;
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
  /// The index into the chunk vectors (the layer partition, chunk * pp + stage for interleaving) of the layers
  /// `chunk` of `stage` holds.
  int64_t partition_index(int64_t stage, int64_t chunk) const
  {
    if (two_directions)
      return chunk == 0 ? stage : groups.pp - 1 - stage;
    return chunk * groups.pp + stage;
  }
  /// Whether `stage` holds the first layers (the embedding) or the last (the output layer) in one of its chunks.
  bool holds_embedding(int64_t stage) const { return stage == 0 || (two_directions && stage == groups.pp - 1); }
  bool holds_head(int64_t stage) const { return stage == groups.pp - 1 || (two_directions && stage == 0); }
  /// Layers one device of `stage` holds, over all its chunks.
  int64_t stage_layers(int64_t stage) const;
  /// Of those, the ones recomputed in full.
  int64_t stage_recomputed_layers(int64_t stage) const;
  /// Of those, the dense first layers of a model with experts (first_k_dense_replace); 0 for other models.
  int64_t stage_dense_layers(int64_t stage, const model::ModelSpec& m) const;
};

/// The plan of a loaded (checked) scenario.
DerivedPlan derive_plan(const scenario::ScenarioSpec& s);

}  // namespace dtsim::parallel
