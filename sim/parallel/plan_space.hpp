#pragma once
/// The parallel plans a GPU cluster offers for one model, batch and device count: every combination of tensor
/// and pipeline sizes (data parallelism fills the rest), chunks per stage, schedule, micro batch, recomputation and
/// sequence parallelism, checked for divisibility and memory, with a count of each reason for pruning. This is
/// what "partitioning" asks of a user; a wafer-scale system has one plan.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "scenario/scenario_spec.hpp"

namespace dtsim::parallel {

/// The values tried along each dimension.
struct PlanDimensions {
  std::vector<int64_t> micro_batches{1, 2, 4};
  std::vector<int64_t> chunks{1, 2};  ///< vpp; > 1 means the interleaved schedule
  std::vector<scenario::Recompute> recompute{scenario::Recompute::Selective, scenario::Recompute::Full};
  bool gpipe = false;             ///< also try GPipe (vpp 1)
  bool sp_both = false;           ///< with tp > 1, try without sequence parallelism too (else always on)
  /// Where full recomputation fits, recompute only the fewest layers per chunk that fit
  /// (training.recompute_layers) instead of every layer.
  bool partial_recompute = false;
  /// Each overlap option the plan allows (parallel.tp_overlap with sp, parallel.param_gather_overlap with ZeRO 1
  /// and 2, parallel.pp_overlap with pp > 1) off and on; false: the scenario's own settings.
  bool overlaps = false;
  /// ZeRO stages, expert-parallel and context-parallel sizes to try; empty: the scenario's own value only.
  std::vector<int> zero;
  std::vector<int64_t> ep, cp;
  /// For models with experts and ep > 1: expert_tp tp and 1 (with tp > 1), and ep_overlap off and on where the
  /// schedule pairs units; false: the scenario's own.
  bool expert_options = false;
  /// Precisions to try; empty: the scenario's own.
  std::vector<std::string> precisions;
  /// The dimensions of `dtsim search`: micro batch 1..8, chunks 1..4 (and the scenario's own), every recomputation
  /// (full recomputation of the fewest layers per chunk that fit), GPipe, sp on and off, ZeRO 0 and 1, for models with
  /// experts every power-of-two ep up to the expert count, for sequences of 8K tokens cp 1, 2 and of 16K or more cp 1,
  /// 2, 4 (always including the scenario's own values).
  static PlanDimensions wide(const scenario::ScenarioSpec& base);
  /// `dtsim search --full-space`: wide, plus ZeRO 2 and 3 on plans without pipeline parallelism, every overlap
  /// option off and on, fp8 beside bf16 on devices with an fp8 peak, cp 2 from sequences of 4K tokens on, and for
  /// models with experts expert_tp and ep_overlap (expert_options). Several times slower: ZeRO-3 plans gather
  /// every layer over the data-parallel group, and the overlaps multiply the plans. Of the overlaps, only
  /// tensor-parallel overlap slows the compute beside it (the SMs its kernels take); gradient, parameter-gather and
  /// pipeline overlaps cost the GPU nothing in dtsim.
  static PlanDimensions full(const scenario::ScenarioSpec& base);
};

struct PlanSpace {
  std::vector<scenario::ScenarioSpec> fitting;  ///< plans that divide and fit in memory
  int64_t candidates = 0;                       ///< combinations looked at
  int64_t invalid = 0;                          ///< do not divide (heads, layers, batch, ...)
  int64_t not_fitting = 0;                      ///< divide but do not fit in device memory
  std::map<std::string, int64_t> pruned;        ///< reason -> plans pruned for it (first reason of each plan)
};

/// tp runs over the powers of two up to the devices of a scale-up (NVLink) domain, pp over the stage counts up to the
/// layer count that divide the devices, dp = devices / (tp * pp); then the dimensions above. Where pp * vpp does not
/// divide the layers, the chunks split them unevenly, the ends (embedding, head) taking fewer (parallel.stage_layers).
PlanSpace enumerate_plans(const scenario::ScenarioSpec& base, const PlanDimensions& dims = PlanDimensions{});

/// Called with each plan that divides and fits, in enumerate_plans' order; the spec is valid during the call only.
using PlanVisitor = std::function<void(const scenario::ScenarioSpec&)>;
/// The same plans handed to `fits` one at a time instead of kept (`fitting` stays empty): a search keeps only what
/// tells them apart (app::SearchPlans), not 94,544 specs of about 11 KB each (DeepSeek-V3's full space).
PlanSpace enumerate_plans(const scenario::ScenarioSpec& base, const PlanDimensions& dims, const PlanVisitor& fits);

/// How describe_plan writes the recomputation: bare in a column of many plans (`dtsim search`), labelled where a plan
/// is read alone (`dtsim compare`'s plan cell).
enum class RecomputeWord { Bare, Labelled };

/// "tp 8 pp 16 dp 8 vpp 2 sp mb 1 selective 1f1b" for tables; labelled: "... mb 1 recompute selective 1f1b".
std::string describe_plan(const scenario::ScenarioSpec& s, RecomputeWord word = RecomputeWord::Bare);

}  // namespace dtsim::parallel
