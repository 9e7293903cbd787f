#pragma once
/// A proven lower bound on a GPU cluster's simulated step time, cheap enough to compute for every plan of a search
/// before simulating any: `dtsim search` simulates plans in the order of their bounds and leaves out those whose
/// bound exceeds the k-th best step time already simulated (they cannot enter the top k).
#include "parallel/collective.hpp"
#include "parallel/plan.hpp"
#include "scenario/scenario_spec.hpp"
#include "systems/gpu_cluster/gpu_step.hpp"

namespace dtsim::systems {

/// The step time of the plan's pipeline schedule with every kernel running at the time the compute model gives it
/// alone on its GPU and no communication taking time but the pipeline hand-offs (pipeline_handoff_lower_bound_s, on
/// each input from another stage), the expert all-to-alls (collectives::expert_all_to_all_time), without tp_overlap the
/// TP collectives not issued beside a kernel, and the TP collectives of an overlap group (replay::overlap_group_end),
/// each at its best case (alone on its links): each unit takes the sum of its compute steps plus the collectives its
/// lane waits for, an overlap group at least the longer of its kernel and its TP collectives one after the other; a
/// unit starts once the stage's previous unit (or pair of units) has ended and the units whose activations or gradients
/// it reads have ended; a pair of units (DualPipe, ep_overlap) takes the GPU one kernel at a time, so it lasts at least
/// the sum of both units' kernels, its first lane at least its own kernels and collectives (one lane's collective may
/// hide behind the other's kernels, never behind its own) and its second lane at least its kernels; then each stage's
/// gradient collectives (replay/gradient_sync.hpp: the buckets the backward releases, or every gradient after it),
/// which its data-parallel communicator runs one at a time, each released no earlier than the bound's time for the
/// steps before it and taking at least NCCL's predicted time on an uncontended fabric, so that the optimizer starts no
/// earlier than max over r of (r + the durations of those released at or after r); with tied embeddings on the first
/// and last stage, their optimizers only once both have got there and the embedding gradients' all-reduce has run
/// (embedding_sync_lower_bound_s); then the optimizer, its parameter all-gathers
/// after it (parameter_refresh_lower_bound_s) and the stack's fixed time per step. The replay only adds to each of
/// these (other collectives, transfers, waits, contention, kernels slowed by collectives' SMs), so the result is never
/// above the simulated step time (tests/unit/step_bound_test.cpp checks it on plans of every schedule, with and without
/// paired chunks).
double step_time_lower_bound(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan, const GpuStep& step);

/// The least time an activation (or its gradient) takes from a unit of `from_stage` to one of `to_stage`
/// (replay::PipelineTransfers): the route's latency plus the bytes at the capacity of the sender's NVLink link within
/// a scale-up domain, of its NIC across domains; the least over the kinds of route the pipeline replicas' pairs of
/// devices take. The step bound adds it on every data edge between stages.
double pipeline_handoff_lower_bound_s(const parallel::DerivedPlan& plan, const replay::StepProgram& prog,
                                      int64_t from_stage, int64_t to_stage, const collectives::Fabric& fabric);

/// Tied word embeddings held on the first and the last stage (replay::StepProgram::embedding_sync_bytes > 0, pp > 1):
/// the all-reduce of the two copies' gradients that replay::Driver::sync_embedding runs before those stages'
/// optimizers, at NCCL's predicted time on an uncontended fabric over the pair the replay simulates (dp 0, tp 0),
/// which its flows take alone (parallel/collective.hpp); more when they share links. 0 where the replay runs none.
double embedding_sync_lower_bound_s(const parallel::DerivedPlan& plan, const replay::StepProgram& prog,
                                    const collectives::Fabric& fabric);

/// ZeRO 1 and 2 without parallel.param_gather_overlap: after its optimizer a stage all-gathers its updated parameters
/// over the data-parallel group, then its experts' over the expert-data-parallel group, one after the other on the
/// device's data-parallel communicator (replay::DataParallelQueue runs one collective at a time), and its step ends
/// after them. Each takes at least NCCL's predicted time on an uncontended fabric (parallel/collective.hpp: the
/// replay's flows take exactly that alone, longer when they share links); their sum, in seconds. 0 where the step
/// program has no such gather.
double parameter_refresh_lower_bound_s(const parallel::DerivedPlan& plan, const replay::StepProgram& prog,
                                       int64_t stage, const collectives::Fabric& fabric);

}  // namespace dtsim::systems
