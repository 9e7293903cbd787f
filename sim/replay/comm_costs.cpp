#include "replay/comm_costs.hpp"

#include <algorithm>
#include <map>

namespace dtsim::replay {

namespace {
// Transformer Engine's default userbuffers configuration (transformer_engine/pytorch/module/base.py, initialize_ub,
// get_default_config): the ring-exchange all-gathers take 1 SM; the pipelined and bulk reduce-scatters take 16,
// which the GEMM beside them gives up (set_sm_margin).
constexpr double kOverlapAllGatherSms = 1, kOverlapReduceScatterSms = 16;
}  // namespace

double CommCosts::tp_exclusive_time(int64_t device, const Step& st)
{
  if (!tp_exclusive_)
    return 0;
  const auto& link = hw_.scale_up.nvlink;
  double total = 0;
  for (const auto& ph : *groups_.tp(device, st)) {
    // The folded phase's flows share one sender's link to the switch; on a mesh each peer has its own link, and
    // the busiest ends the phase.
    std::map<int64_t, double> bytes_on_link;
    for (const auto& f : ph.flows)
      bytes_on_link[hw_.scale_up.full_mesh ? f.dst : 0] += f.bytes;
    double busiest = 0;
    for (const auto& [link_end, bytes] : bytes_on_link)
      busiest = std::max(busiest, bytes);
    total += ph.latency_s + (ph.flows.empty() ? 0.0 : link.latency_s + busiest / link.goodput_Bps);
  }
  return total;
}

double CommCosts::merged_tp_time(int64_t device, const Step& st)
{
  // Folded: one device per stage and each stage has its own steps, so the step alone identifies the collective.
  auto [it, fresh] = merged_tp_time_.try_emplace(&st, 0.0);
  if (fresh)
    it->second = tp_exclusive_time(device, st);
  return it->second;
}

double CommCosts::closed_form_overlap(int64_t device, const std::vector<Step>& steps, size_t begin, size_t end,
                                      double& compute_end)
{
  // Kept per group (folded: each stage has its own steps), as merged_tp_time keeps each collective's: run_merged
  // asks once to build its run and once to book it, on every microbatch.
  auto [it, fresh] = closed_form_group_.try_emplace(&steps[begin]);
  if (!fresh) {
    compute_end = it->second.compute_end;
    return it->second.length;
  }
  double remaining = 0, t = 0, drain = 0;
  compute_end = -1;
  for (size_t k = begin; k < end; ++k)
    if (steps[k].kind == Step::Kind::Compute)
      remaining = steps[k].seconds;
  for (size_t k = begin; k < end; ++k)
    remaining += margin_extra_s(steps[k]);
  for (size_t k = begin; k < end; ++k) {
    const Step& st = steps[k];
    if (st.kind != Step::Kind::TpCollective)
      continue;
    const double c = merged_tp_time(device, st);
    const double share = overlap_sm_share(st);
    if (st.ub.chunks > 0)
      drain = ub_drain_s(st, c);
    if (compute_end < 0 && remaining <= (1 - share) * c) {
      compute_end = t + remaining / (1 - share);
      remaining = 0;
    } else if (compute_end < 0) {
      remaining -= (1 - share) * c;
    }
    t += c;
  }
  if (compute_end < 0)
    compute_end = t + remaining;
  // A reduce-scatter overlapped with its GEMM chunk by chunk (Step::ub.chunks) ends its last chunk after the GEMM.
  it->second = {std::max(t, compute_end + drain), compute_end};
  return it->second.length;
}

double CommCosts::overlap_sm_share(const Step& st) const
{
  if (st.copy_engine)
    return 0;
  if (st.beside_next)
    return nccl_sm_share();
  // A ring exchange's sends are copy-engine copies: TE's default `use_ce: True` (base.py get_default_config, v2.9)
  // makes userbuffers_send a cudaMemcpyAsync (userbuffers.cu, v2.9 line 2329) with a one-thread signal kernel.
  if (st.ub.chunks > 0 && st.ub.method == model::UbMethod::RingExchange)
    return 0;
  if (st.ub.chunks > 0)  // under set_sm_margin the GEMM has already left them (margin_extra_s)
    return st.ub.sm_margin ? 0.0 : sm_share(st.ub.sms);
  return sm_share(st.collective == model::TpCollective::ReduceScatter ? kOverlapReduceScatterSms
                                                                       : kOverlapAllGatherSms);
}

double CommCosts::ub_drain_s(const Step& st, double c) const
{
  if (st.ub.chunks <= 0)
    return 0;
  if (st.ub.method == model::UbMethod::Pipeline)
    return c / st.ub.chunks;  // split_overlap_rs: the last chunk's reduce-scatter starts after the last GEMM chunk
  // CommOverlapP2PBase::split_overlap_rs (comm_gemm_overlap.cpp, TE v2.9 lines 1151-1177): step i runs GEMM chunk i
  // and sends chunk i - 1, so the tp - 1 sends (c in all) each follow their chunk, and the last chunk, the rank's
  // own rows, is sent nowhere: the last send runs beside it. Its reduction kernel is a kernel of the next step
  // (model::add_ring_exchange_reduction).
  if (st.ub.chunks < 2)
    return 0;
  return std::max(0.0, c / (st.ub.chunks - 1) - st.ub_gemm_s / st.ub.chunks);
}

double CommCosts::margin_extra_s(const Step& st) const
{
  // UbufCommOverlap's constructor: _math_sms = set_sm_margin ? multiProcessorCount - num_comm_sm :
  // multiProcessorCount, and split_overlap_rs runs every chunk GEMM on _math_sms (transformer_engine/pytorch/csrc/
  // comm_gemm_overlap.h, v1.8); the same in TE 2.x's CommOverlapCore::initialize, for both methods
  // (comm_gemm_overlap.cpp, v2.9 lines 98-99). A compute-bound GEMM on a share s fewer SMs takes 1 / (1 - s) as long.
  if (st.kind != Step::Kind::TpCollective || !st.ub.sm_margin || st.ub_gemm_s <= 0)
    return 0;
  const double share = sm_share(st.ub.sms);
  return share < 1 ? st.ub_gemm_s * share / (1 - share) : 0.0;
}

double CommCosts::sm_share(double sms) const
{
  // A device without its SM count (device.sm_count, required by tp_overlap only) loses nothing to them.
  return hw_.device.sm_count > 0 ? std::min(1.0, sms / double(hw_.device.sm_count)) : 0.0;
}

double CommCosts::nccl_sm_share() const
{
  // NCCL runs one CTA per channel, each holding an SM to itself, and uses 16 SMs on a DGX (NVIDIA/nccl#689, the
  // maintainer's answer). The same 16 as userbuffers' reduce-scatters, a separate fact.
  constexpr double kNcclCollectiveSms = 16;
  return sm_share(kNcclCollectiveSms);
}

}  // namespace dtsim::replay
