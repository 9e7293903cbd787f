#pragma once
/// Where each rank of a (dp, tp, pp) plan sits: Megatron-LM's order, tensor-parallel fastest, then data
/// parallel, then pipeline (megatron/core/parallel_state.py, RankGenerator, order "tp-cp-ep-dp-pp"), rank r on the
/// job's device r, filling every device of each scale-up (NVLink) domain in turn. A tensor-parallel group shares a
/// domain where tp divides the domain's devices; where it does not (tp 16 on a 72-GPU NVL72 rack) the group that
/// reaches a domain's end straddles two, and NCCL lays its rings over the NICs between them (tp_groups_straddling).
/// A domain is a host on DGX-style hardware and several hosts on an NVL72 rack (hardware::ScaleUpSpec); what sits in
/// one domain talks over NVLink, what does not through the NICs of its hosts (platform/fabric_layout.hpp).
/// A job sharing a cluster with other jobs (replay/shared_fabric.hpp) sits on some of its domains: its domain i is
/// the cluster's domain nodes[i], and domain numbers (domain_of) are the cluster's.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "parallel/strided_group.hpp"

namespace dtsim::parallel {

struct Coord {
  int64_t stage = 0, dp = 0, tp = 0;
};

/// The groups besides tp whose placement over domains decides which pipeline is slowest (represent_slowest_pipeline).
struct CrossingGroups {
  int64_t cp = 1, ep = 1;
  bool experts_across_tp = false;  ///< expert_tp 1 with tp > 1: an expert group is ep consecutive ranks, TP ranks first
};

class Placement {
 public:
  /// `devices_per_domain`: the devices of one scale-up domain (HardwareSpec::domain_devices); the job's last domain
  /// may be partly used.
  Placement(int64_t dp, int64_t tp, int64_t pp, int64_t devices_per_domain)
      : dp_(dp), tp_(tp), pp_(pp), per_domain_(devices_per_domain) {}
  /// Coordinates count data-parallel indices from the representative's (represent_by): dp 0 is the pipeline that
  /// folding simulates.
  int64_t device(const Coord& c) const { return c.stage * dp_ * tp_ + (c.dp + first_dp_) % dp_ * tp_ + c.tp; }
  Coord coord(int64_t device) const
  {
    return {device / (dp_ * tp_), ((device / tp_) % dp_ + dp_ - first_dp_) % dp_, device % tp_};
  }
  /// Folding simulates data-parallel index 0 of each stage and lets it stand for the others. Where groups straddle
  /// scale-up domains unevenly (NVL72 racks of 72 hold no whole number of groups of 16, 32 or 64), some pipelines are
  /// slower than the rest and the step waits for them: coordinate dp 0 is put on the slowest by
  /// `pipeline_crossing` (a multiple of `crossing_align`, so that context- and expert-parallel groups stay those
  /// Megatron forms), the first of them on a tie (0 where no group crosses). The devices and groups are the same;
  /// only which of them dp 0 names changes.
  void represent_slowest_pipeline(const CrossingGroups& groups);
  /// The slowest by `pipeline_crossing` of the candidates below `candidates_below` (multiples of crossing_align,
  /// at most dp), the first on a tie: represent_slowest_pipeline's choice, which searches one crossing_period.
  int64_t slowest_pipeline(const CrossingGroups& groups, int64_t candidates_below) const;
  /// Data-parallel indices between candidate representatives: whole context-parallel rings and expert groups.
  int64_t crossing_align(const CrossingGroups& groups) const;
  /// Data-parallel indices after which the candidates' crossings repeat: pipeline_crossing(r + period) equals
  /// pipeline_crossing(r) for every candidate r (a multiple of crossing_align); dp where they need not repeat.
  int64_t crossing_period(const CrossingGroups& groups) const;
  /// How much the groups of `pipeline` (rank order) wait on the scale-out network, per stage: the sum over its
  /// groups (tp, cp, ep) of the share of its slowest member's peers outside that member's domain (a collective ends
  /// with its slowest member). An all-to-all member in a domain holding a of the group's n sends n - a of its n - 1
  /// shares over its NIC; a ring (tp, cp) that spans two domains runs at its NIC hop's pace on every step (share 1).
  std::vector<double> pipeline_crossing(int64_t pipeline, const CrossingGroups& groups) const;
  /// The pipeline (data-parallel index in rank order) that coordinate dp 0 names.
  int64_t representative_pipeline() const { return first_dp_; }
  /// How many of the group's members sit in each domain it spans, domains in ascending order.
  std::vector<int64_t> members_per_domain(const std::vector<int64_t>& group) const;
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
  /// dp_group's ranks without listing them: every tp devices from the stage's first (rank order).
  StridedGroup dp_ranks(int64_t stage, int64_t tp) const { return {stage * dp_ * tp_ + tp, tp_, dp_}; }
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
  /// Tensor-parallel groups of the job (dp x pp) and those that span more than one domain although tp fits in one
  /// (tp <= devices_per_domain): 0 where tp divides the domain, or exceeds it (every group then spans several).
  int64_t tp_groups() const { return dp_ * pp_; }
  int64_t tp_groups_straddling() const;
  /// Whether the tp group of pipeline `pipeline` (rank order) on stage `stage` spans more than one domain.
  bool tp_group_straddles(int64_t stage, int64_t pipeline) const;

 private:
  int64_t dp_, tp_, pp_, per_domain_;
  int64_t first_dp_ = 0;  ///< the data-parallel index, in rank order, that coordinate dp 0 names
  std::vector<int64_t> cluster_nodes_;  ///< empty: domain i is domain i
  int64_t cluster_size_ = 0;
};

/// What run, explain and report say where tensor-parallel groups straddle two domains ("1 of 9 tp groups spans two
/// NVLink domains: its collectives cross the scale-out network"); empty where none does.
std::string tp_straddling_note(const Placement& placement);

}  // namespace dtsim::parallel
