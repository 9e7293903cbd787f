#pragma once
/// How Transformer Engine's userbuffers overlap a row-parallel layer's forward reduce-scatter with its GEMM (ub_cfg
/// `method` of `proj_fprop` and `fc2_fprop`; scenario `parallel.ub_proj_fprop_method`, `ub_fc2_fprop_method`).
#include <string>
#include <vector>

namespace dtsim::model {

enum class UbMethod {
  /// `pipeline` (CommOverlapBase::split_overlap_rs): the GEMM in num_splits chunks of rows, each chunk
  /// reduce-scattered by a userbuffers kernel on `num_sm` SMs once its GEMM chunk is done, the last after the GEMM.
  /// Transformer Engine's default for both layers (module/base.py initialize_ub, `methods["pipeline"]`).
  Pipeline,
  /// `ring_exchange` (CommOverlapP2PBase::split_overlap_rs): tp GEMM chunks of M / tp rows, each chunk's partial
  /// result sent peer to peer to the rank that owns those rows by copy engine; the received partials summed by a
  /// reduction kernel after the last chunk (model/transformer.cpp mark_pipelined_reduce_scatters).
  RingExchange,
};

/// The scenario's names, in the enum's order.
inline const std::vector<std::string>& ub_method_names()
{
  static const std::vector<std::string> names = {"pipeline", "ring_exchange"};
  return names;
}

/// The method a name gives (one of ub_method_names(); the scenario reader refuses others).
inline UbMethod ub_method_of(const std::string& name)
{
  return name == "ring_exchange" ? UbMethod::RingExchange : UbMethod::Pipeline;
}

}  // namespace dtsim::model
