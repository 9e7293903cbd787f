#pragma once
/// Pipeline schedules as a catalog, in the style of SimGrid's named model tables: one file per schedule in
/// scenario/schedules/ defines its entry (its YAML name, which options it takes, the order in which each stage runs
/// its units, and the microbatches whose activations a stage holds at its peak), and schedule_registry.cpp lists
/// each entry in one line. The YAML check (scenario_yaml.cpp), the plan space, the memory model, the replay's
/// dependency graph (parallel/schedule.cpp) and docs/yaml-reference.md read it; adding a schedule is adding a file
/// and its line (docs/architecture.md, "Catalogs").
#include <cstdint>
#include <string>
#include <vector>

namespace dtsim::scenario {

/// Which part of a backward pass a unit runs. Zero-bubble schedules (Qi et al., ICLR 2024) split it: the input
/// gradients (B: every backward kernel but the weight-gradient GEMMs, and the tensor-parallel collectives) are on
/// the pipeline's critical path, the weight gradients (W: X^T dY of each layer with parameters) are not and fill
/// the bubbles. Other schedules run it whole. Forward units are `Whole`.
enum class BackwardPart { Whole, Input, Weight };

/// Which layers each model chunk of a stage holds, the model split into pp * vpp consecutive virtual stages.
enum class ChunkPlacement {
  /// Chunk c of stage i holds virtual stage c * pp + i: a microbatch loops over the stages vpp times (Megatron-LM's
  /// interleaving; with one chunk, plain pipelining).
  Looped,
  /// Two chunks: chunk 0 of stage i holds virtual stage i, chunk 1 virtual stage 2 pp - 1 - i (Qi et al., NeurIPS
  /// 2024, Sec. 3). A microbatch goes down the stages through chunk 0 and back up through chunk 1: the last stage
  /// hands its chunk 0's output to its own chunk 1 (no transfer), and the first stage holds both the embedding and
  /// the output layer with the loss.
  V,
};

/// One unit in a stage's order: the forward or backward pass (or a part of it) of one model chunk on one
/// microbatch. Consecutive units with the same group run back to back, the stage's pipeline sends and receives
/// happening between groups.
struct StageUnit {
  int64_t chunk = 0;
  int64_t microbatch = 0;
  bool backward = false;
  int64_t group = 0;
  BackwardPart part = BackwardPart::Whole;
  /// Runs beside the unit before it (same group), the two as one pair: their kernels take the GPU one at a time
  /// while one's expert all-to-alls run beside the other's compute (DualPipe's paired forward and backward chunks,
  /// Megatron-Core's combined 1F1B; parallel.ep_overlap). Without the overlap it runs after it, as any unit of the
  /// group.
  bool beside_previous = false;
};

/// Seconds of one microbatch's forward, input-gradient (B) and weight-gradient (W) pass of each model chunk of each
/// stage, indexed [stage][chunk]: what a schedule whose order is list-scheduled on the passes' times reads
/// (ScheduleDef::timed_stage_orders). Empty: every pass takes one unit of time.
struct PassTimes {
  std::vector<std::vector<double>> forward_s, input_s, weight_s;
  bool empty() const { return forward_s.empty(); }
};

/// A schedule's entry. The flags default to false, so that an entry names only what it does.
struct ScheduleDef {
  const char* name = "";     ///< the value of `schedule:` in a scenario
  const char* summary = "";  ///< one line for `dtsim run --help`
  /// Takes model chunks: parallel.vpp >= 2 and pp >= 2 are required and, placed in loops, the microbatches per
  /// pipeline must be a multiple of pp (Megatron-LM's interleaved schedule groups microbatches by pp). A schedule
  /// that does not take them requires vpp 1.
  bool chunked = false;
  /// `dtsim search` tries it without being asked (GPipe is tried only with --gpipe: it never beats 1F1B in time
  /// and holds every microbatch's activations).
  bool searched_by_default = false;
  /// Runs backward passes as two units, input gradients (B) then weight gradients (W), where its order says so
  /// (see BackwardPart); a schedule that does not never does.
  bool splits_backward = false;
  /// Needs asynchronous pipeline transfers (parallel.pp_overlap): its W passes run while transfers are in flight,
  /// which Megatron-LM's blocking exchange would hold up.
  bool needs_async_p2p = false;
  /// Feeds microbatches from both ends (DualPipe): every stage holds two chunks, chunk 0 the stage's own layers for
  /// the half of the microbatches that go down the stages, chunk 1 the layers of stage pp - 1 - i (a second copy)
  /// for the half that come up. `parallel.vpp` stays 1; the microbatches per pipeline must be even and at least
  /// 2 pp, and pp even. Its order numbers each direction's microbatches from 0 to m / 2 - 1.
  bool two_directions = false;
  /// Which layers its chunks hold (see ChunkPlacement); a V takes exactly two chunks (parallel.vpp 2).
  ChunkPlacement chunk_placement = ChunkPlacement::Looped;
  /// Some of its units run beside the one before them (StageUnit::beside_previous): parallel.ep_overlap applies.
  bool pairs_units = false;
  /// parallel.ep_overlap's default: on for DualPipe (its reference runs every F&B overlapped), off for interleaved
  /// 1F1B (Megatron-Core's --overlap-moe-expert-parallel-comm is off by default).
  bool pairs_by_default = false;
  /// Microbatches (of one chunk) whose activations `stage` holds at its peak. Under a split backward a
  /// microbatch's activations are counted whole until its W unit has run (W needs only the inputs of the layers
  /// with parameters: an upper bound).
  int64_t (*in_flight)(int64_t stage, int64_t pp, int64_t vpp, int64_t microbatches) = nullptr;
  /// The units each stage runs, in order, indexed by stage (all at once: a list-scheduled order, zb-h2's, comes
  /// out of one pass over every stage).
  std::vector<std::vector<StageUnit>> (*stage_orders)(int64_t pp, int64_t vpp, int64_t microbatches) = nullptr;
  /// The same, list-scheduled on the passes' own times (ZB-V, whose order is tight at unit times and must follow
  /// the real ratio of F, B and W, as its reference implementation does); nullptr for orders that do not depend on
  /// them. stage_orders is then this order at unit times.
  std::vector<std::vector<StageUnit>> (*timed_stage_orders)(int64_t pp, int64_t vpp, int64_t microbatches,
                                                            const PassTimes& times) = nullptr;
};

/// Every schedule, in the order the YAML check lists them.
const std::vector<ScheduleDef>& schedule_registry();
/// The entry named `name` (ScenarioSpec::schedule, checked by the YAML reader); an unknown name is a bug.
const ScheduleDef& schedule_def(const std::string& name);
/// The entry named `name`, or nullptr.
const ScheduleDef* find_schedule(const std::string& name);
/// The names, in registry order.
std::vector<std::string> schedule_names();

}  // namespace dtsim::scenario
