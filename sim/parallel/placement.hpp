#pragma once
/// Where each rank of a (dp, tp, pp) plan sits: Megatron-LM's order, tensor-parallel fastest, then data
/// parallel, then pipeline, so that a tensor-parallel group shares a node whenever tp <= devices per node.
/// A job sharing a cluster with other jobs (replay/shared_fabric.hpp) sits on some of its nodes: its node i is the
/// cluster's node nodes[i], and node numbers (node_of) are the cluster's.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dtsim::parallel {

struct Coord {
  int64_t stage = 0, dp = 0, tp = 0;
};

class Placement {
 public:
  Placement(int64_t dp, int64_t tp, int64_t pp, int64_t devices_per_node)
      : dp_(dp), tp_(tp), pp_(pp), per_node_(devices_per_node) {}
  int64_t device(const Coord& c) const { return c.stage * dp_ * tp_ + c.dp * tp_ + c.tp; }
  Coord coord(int64_t device) const { return {device / (dp_ * tp_), (device / tp_) % dp_, device % tp_}; }
  /// The cluster node the device sits on.
  int64_t node_of(int64_t device) const
  {
    const int64_t n = device / per_node_;
    return cluster_nodes_.empty() ? n : cluster_nodes_[std::size_t(n)];
  }
  /// The device's number in the cluster (its own number unless the job shares a cluster).
  int64_t cluster_device(int64_t device) const { return node_of(device) * per_node_ + device % per_node_; }
  int64_t devices() const { return dp_ * tp_ * pp_; }
  int64_t nodes() const { return (devices() + per_node_ - 1) / per_node_; }
  /// Places the job on cluster nodes `nodes` (one per node of the job, in increasing order) of a cluster of
  /// `cluster_size` nodes.
  void place_on(std::vector<int64_t> nodes, int64_t cluster_size);
  /// Nodes of the cluster the job runs on: its own, or the shared cluster's.
  int64_t cluster_size() const { return cluster_nodes_.empty() ? nodes() : cluster_size_; }
  std::vector<int64_t> tp_group(int64_t stage, int64_t dp) const;
  std::vector<int64_t> dp_group(int64_t stage, int64_t tp) const;
  /// The `size` consecutive data-parallel indices around `dp` (same stage and TP rank): an expert-parallel group
  /// (Megatron-LM carves ep consecutive ranks out of dp), or a context-parallel ring (the driver places the cp ranks
  /// inside the data-parallel index, dp' = dp * cp + c, Megatron's tp-cp-dp order).
  std::vector<int64_t> rank_group(int64_t stage, int64_t dp, int64_t tp, int64_t size) const;
  /// The dp / ep ranks that hold the same experts as data-parallel rank `dp` (their gradients are reduced together).
  std::vector<int64_t> expert_dp_group(int64_t stage, int64_t dp, int64_t tp, int64_t ep) const;
  /// With experts whole on every TP rank (parallel.expert_tp 1), groups are carved from the stage's ranks in device
  /// order, TP ranks first (Megatron-Core's expert rank order): the expert-parallel group of (dp, tp), `ep`
  /// consecutive ranks (tp divides ep), and the ranks holding the same experts, every ep-th.
  std::vector<int64_t> expert_group_across_tp(int64_t stage, int64_t dp, int64_t tp, int64_t ep) const;
  std::vector<int64_t> expert_dp_group_across_tp(int64_t stage, int64_t dp, int64_t tp, int64_t ep) const;
  int64_t dp() const { return dp_; }
  int64_t tp() const { return tp_; }
  int64_t pp() const { return pp_; }
  int64_t devices_per_node() const { return per_node_; }

 private:
  int64_t dp_, tp_, pp_, per_node_;
  std::vector<int64_t> cluster_nodes_;  ///< empty: node i is node i
  int64_t cluster_size_ = 0;
};

}  // namespace dtsim::parallel
