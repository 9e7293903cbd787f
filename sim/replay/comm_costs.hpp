#pragma once
// Internal to sim/replay: what communication costs a device where it needs no simulated flow. Folded, when nothing
// but the representative's tensor-parallel flows ever uses its NVLink links (Folding::nvlink_exclusive_to_tp), a
// TP collective's time in closed form, and an overlap group's timeline; everywhere, the share of the GPU's
// streaming multiprocessors a collective's kernels hold from the compute beside them. No SimGrid: numbers only.
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "hardware/hardware_spec.hpp"
#include "replay/group_collectives.hpp"
#include "replay/step_program.hpp"

namespace dtsim::replay {

class CommCosts {
 public:
  /// `tp_exclusive`: folded, and the representatives' NVLink links carry their TP flows only.
  CommCosts(GroupCollectives& groups, const hardware::HardwareSpec& hw, bool tp_exclusive)
      : groups_(groups), hw_(hw), tp_exclusive_(tp_exclusive) {}
  bool tp_exclusive() const { return tp_exclusive_; }
  /// The TP collective's time in closed form (delays, link latency, bytes over bandwidth), which is exactly what
  /// its uncontended flows would take. 0 when the links are not exclusive to TP.
  double tp_exclusive_time(int64_t device, const Step& st);
  /// The same, kept per step (folded: one device per stage and each stage has its own steps).
  double merged_tp_time(int64_t device, const Step& st);
  /// An overlap group's timeline for steps [begin, end) (one compute step, TP collectives): while collective i
  /// (closed-form time c_i) runs, its kernels hold a share s_i of the GPU and the compute runs at 1 - s_i; after
  /// the last one, at full speed. Returns the group's length; `compute_end`: when its compute ends, from the group's
  /// start. Kept per group, by its first step.
  double closed_form_overlap(int64_t device, const std::vector<Step>& steps, size_t begin, size_t end,
                             double& compute_end);

  /// Share of the GPU's SMs a collective's kernels hold while they run beside compute in an overlap group.
  double overlap_sm_share(const Step& st) const;
  /// The part of a userbuffers reduce-scatter (Step::ub.chunks > 0) that takes `c` seconds in all which runs after
  /// the GEMM that produces it: a pipeline's last chunk; a ring exchange's last send less the last GEMM chunk.
  double ub_drain_s(const Step& st, double c) const;
  /// The time a pipelined reduce-scatter under set_sm_margin adds to the compute beside it: the GEMM before it runs
  /// on sm_count - sms SMs for its whole length (0 without the margin or device.sm_count).
  double margin_extra_s(const Step& st) const;
  /// Share of the GPU's SMs an NCCL collective's kernels hold from their launch to their end (0 without
  /// device.sm_count): the compute beside them runs on the rest.
  double nccl_sm_share() const;
  /// The share of the GPU that `sms` streaming multiprocessors are (at most all of it; 0 without device.sm_count).
  double sm_share(double sms) const;

 private:
  GroupCollectives& groups_;
  const hardware::HardwareSpec& hw_;
  bool tp_exclusive_;
  std::unordered_map<const Step*, double> merged_tp_time_;  // closed-form TP time per step
  struct GroupTime {
    double length = 0, compute_end = 0;
  };
  std::unordered_map<const Step*, GroupTime> closed_form_group_;  // closed_form_overlap per group, by its first step
};

}  // namespace dtsim::replay
