#pragma once
/// How a mixture of experts' tokens reach their experts' ranks (scenario `parallel.moe_dispatcher`): the choice
/// decides the bytes the expert all-to-all sends between nodes (model/node_limited_routing.hpp).
#include <string>
#include <vector>

namespace dtsim::model {

enum class TokenDispatcher {
  /// Megatron-Core's MoEAlltoAllTokenDispatcher (moe_token_dispatcher_type "alltoall", its default): each routed
  /// copy of a token sent to its expert's rank on its own, over NCCL.
  AllToAll,
  /// DeepSeek's DeepEP (Megatron-Core's flex dispatcher, moe_flex_dispatcher_backend "deepep"): a token sent once
  /// per destination node over RDMA, then forwarded over NVLink.
  DeepEp,
  /// NVIDIA's HybridEP (moe_flex_dispatcher_backend "hybridep", DeepEP's hybrid-ep branch): the same once-per-node
  /// send between NVLink domains.
  HybridEp,
};

/// The scenario's names, in the enum's order.
inline const std::vector<std::string>& token_dispatcher_names()
{
  static const std::vector<std::string> names = {"alltoall", "deepep", "hybridep"};
  return names;
}

/// The dispatcher a name gives (one of token_dispatcher_names(); the scenario reader refuses others).
inline TokenDispatcher token_dispatcher_of(const std::string& name)
{
  return name == "deepep" ? TokenDispatcher::DeepEp : name == "hybridep" ? TokenDispatcher::HybridEp
                                                                         : TokenDispatcher::AllToAll;
}

/// DeepEP and HybridEP send a token over the network once per destination node, not once per routed copy.
inline bool sends_once_per_node(TokenDispatcher d) { return d != TokenDispatcher::AllToAll; }

}  // namespace dtsim::model
