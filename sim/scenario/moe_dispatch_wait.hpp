#pragma once
/// Where the replay prices the host wait of Megatron-Core's token dispatchers (alltoall, DeepEP, HybridEP; its
/// seconds: replay/moe_host_sync.hpp), or the first reason it does not. One definition for the replay
/// (replay/step_program.cpp) and for the warning that parallel.moe_preprocess_graphed has no effect
/// (scenario/keys_without_effect.cpp), so that the two cannot disagree.
#include "scenario/scenario_spec.hpp"

namespace dtsim::scenario {

/// Whether a scenario's MoE layers wait on the host for the dispatch's token counts.
enum class MoeDispatchWait {
  Priced,        ///< a model with experts, no paired units, host.sync_resume > 0
  NoExperts,     ///< the model has no experts: no dispatcher
  PairedUnits,   ///< a paired schedule (parallel.ep_overlap) queues the other unit's kernels behind it: not priced
  NoSyncResume,  ///< the stack's host.sync_resume is 0: the GPU does not idle at the wait
};

/// The first of those that holds for `s`, in the order of the enum (Priced when none of the others does).
MoeDispatchWait moe_dispatch_wait(const ScenarioSpec& s);

}  // namespace dtsim::scenario
