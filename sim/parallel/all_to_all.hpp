#pragma once
/// The expert all-to-all (token dispatch and combine of a mixture of experts): the flows the replay lays for it and
/// its time in closed form, one rule for the simulation, the search bound and `dtsim explain`. Every member sends
/// bytes / n to each other member at once (NCCL has no all-to-all algorithm to choose: Megatron-Core's and DeepSpeed's
/// token dispatch is one send and one receive per pair), within its scale-up domain over its NVLink, across over its
/// host's NIC; the flows between domains carry the token dispatcher's scale (model/node_limited_routing.hpp: 1 for
/// Megatron-Core's per-copy all-to-all; below 1 for DeepEP and HybridEP, which send a token once per node).
#include <cstdint>
#include <vector>

#include "collectives/algorithm_registry.hpp"
#include "model/model_spec.hpp"
#include "model/token_dispatcher.hpp"
#include "parallel/fabric.hpp"
#include "parallel/placement.hpp"

namespace dtsim::collectives {

/// The factor the token dispatcher `d` (model::expert_inter_node_scale) puts on the bytes of an expert all-to-all's
/// flows between domains, for the scale-up domains `group` spans.
double expert_inter_node_scale(const model::ModelSpec& m, const std::vector<int64_t>& group,
                               const parallel::Placement& placement, model::TokenDispatcher d);

/// The flows of an all-to-all of `bytes` (the whole tensor) over `group`: one from every member to every other,
/// bytes / n each, those between domains times `inter_node_scale`. None for fewer than two members or no bytes.
std::vector<Flow> all_to_all_flows(double bytes, const std::vector<int64_t>& group,
                                   const parallel::Placement& placement, double inter_node_scale);

/// An expert all-to-all of `bytes` over `group` of a model `m` at its best case, in seconds: the fastest member's
/// flows (all_to_all_flows with expert_inter_node_scale) alone on its links at their goodput, within its domain on
/// its NVLink (on a mesh one link per peer), across on its host's NIC, which it has to itself at best (the replay
/// shares it with the other devices of the domain that send at once); each kind of flow after its route's latency.
/// Members of one domain take the same time, so a group spread evenly takes it on every member. 0 for fewer than
/// two members or no bytes.
double expert_all_to_all_time(double bytes, const std::vector<int64_t>& group, const parallel::Placement& placement,
                              const Fabric& fabric, const model::ModelSpec& m, model::TokenDispatcher d);

}  // namespace dtsim::collectives
