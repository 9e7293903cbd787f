#pragma once
/// Where each rank of a (dp, tp, pp) plan sits: Megatron-LM's order, tensor-parallel fastest, then data
/// parallel, then pipeline, so that a tensor-parallel group shares a scale-up (NVLink) domain whenever tp <=
/// devices per domain, and context- and expert-parallel groups (consecutive data-parallel ranks) fill the rest of
/// it. A domain is a host on DGX-style hardware and several hosts on an NVL72 rack (hardware::ScaleUpSpec); what
/// sits in one domain talks over NVLink, what does not through the NICs of its hosts (platform/fabric_layout.hpp).
/// A job sharing a cluster with other jobs (replay/shared_fabric.hpp) sits on some of its domains: its domain i is
/// the cluster's domain nodes[i], and domain numbers (domain_of) are the cluster's.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "parallel/strided_group.hpp"

namespace dtsim::parallel {

/// The devices a plan uses of each scale-up domain of `domain_devices`: whole tensor-parallel groups, so that no
/// group straddles two domains where one fits in a domain (tp 16 on a 72-GPU NVL72 rack: 64, its other 8 idle, as
/// runs that need NVLink for tp leave them). A tp group larger than the domain spans several (tp 16 on DGX hosts of
/// 8): every device is used. DGX-style domains of 8 and power-of-two tp always divide.
inline int64_t devices_used_per_domain(int64_t domain_devices, int64_t tp)
{
  return tp <= domain_devices ? domain_devices - domain_devices % tp : domain_devices;
}

struct Coord {
  int64_t stage = 0, dp = 0, tp = 0;
};

class Placement {
 public:
  /// `devices_per_domain`: the devices the plan uses of each domain (devices_used_per_domain).
  Placement(int64_t dp, int64_t tp, int64_t pp, int64_t devices_per_domain)
      : dp_(dp), tp_(tp), pp_(pp), per_domain_(devices_per_domain) {}
  int64_t device(const Coord& c) const { return c.stage * dp_ * tp_ + c.dp * tp_ + c.tp; }
  Coord coord(int64_t device) const { return {device / (dp_ * tp_), (device / tp_) % dp_, device % tp_}; }
  /// The cluster's scale-up domain the device sits in.
  int64_t domain_of(int64_t device) const
  {
    const int64_t n = device / per_domain_;
    return cluster_nodes_.empty() ? n : cluster_nodes_[std::size_t(n)];
  }
  /// The device's number in the cluster, counted in used devices per domain (its own number unless the job shares a
  /// cluster).
  int64_t cluster_device(int64_t device) const { return domain_of(device) * per_domain_ + device % per_domain_; }
  int64_t devices() const { return dp_ * tp_ * pp_; }
  int64_t domains() const { return (devices() + per_domain_ - 1) / per_domain_; }
  /// Places the job on cluster domains `nodes` (one per domain of the job, in increasing order) of a cluster of
  /// `cluster_size` domains.
  void place_on(std::vector<int64_t> nodes, int64_t cluster_size);
  /// Domains of the cluster the job runs on: its own, or the shared cluster's.
  int64_t cluster_size() const { return cluster_nodes_.empty() ? domains() : cluster_size_; }
  std::vector<int64_t> tp_group(int64_t stage, int64_t dp) const;
  std::vector<int64_t> dp_group(int64_t stage, int64_t tp) const;
  /// dp_group's ranks without listing them: every tp devices from data-parallel rank 0's.
  StridedGroup dp_ranks(int64_t stage, int64_t tp) const { return {device({stage, 0, tp}), tp_, dp_}; }
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
  int64_t devices_per_domain() const { return per_domain_; }

 private:
  int64_t dp_, tp_, pp_, per_domain_;
  std::vector<int64_t> cluster_nodes_;  ///< empty: domain i is domain i
  int64_t cluster_size_ = 0;
};

}  // namespace dtsim::parallel
