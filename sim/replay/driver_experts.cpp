#include "replay/driver.hpp"

#include "parallel/all_to_all.hpp"

namespace dtsim::replay {

// ---- mixture of experts ----------------------------------------------------------------------------------
// Token dispatch and combine: an all-to-all over the expert-parallel group (ep data-parallel ranks of the same
// stage and tensor-parallel rank). Folded, the representative's group runs with the groups of the other TP ranks,
// which share its nodes' NICs; the groups of other data-parallel ranks sit on other nodes.
void Driver::ep_collective(size_t di, int lane, const Step& st, double t0)
{
  Device& d = devices_[di];
  const int64_t seq = d.lanes[size_t(lane)].ep_seq++, ep = plan_.groups.ep;
  // DeepEP and HybridEP send a token once per destination node (fewer still under DeepSeek's node-limited routing).
  const double scale = collectives::expert_inter_node_scale(
      model_, plan_.ep_group(d.coord.stage, d.coord.dp, d.coord.tp), placement_, plan_.comm.moe_dispatcher);
  Phases phases = groups_.ep(d.id, st.bytes, scale);
  // Paired, the all-to-all's kernels run beside the other lane's compute and take SMs from it: DeepSeek-V3's
  // dispatch and combine kernels use 20 SMs ("only 20 SMs are sufficient to fully utilize the bandwidths of IB
  // and NVLink", arXiv 2412.19437, Sec. 3.2.2). Alone, the GPU waits for it anyway.
  constexpr double kAllToAllSms = 20;
  Activities::Occupation* kernels = nullptr;
  if (d.paired && costs_.sm_share(kAllToAllSms) > 0)
    kernels = acts_.occupy(gpu_host(d.id), costs_.sm_share(kAllToAllSms));
  auto done = [this, di, lane, t0, &st, kernels]() {
    Device& w = devices_[di];
    const double now = Activities::now();
    if (kernels != nullptr)
      acts_.release(kernels);
    if (w.paired) {
      book_idle(w, w.b.exposed_ep_comm_s);
    } else {
      w.b.exposed_ep_comm_s += now - t0;
      w.free_t = now;
    }
    trace_.add(w.id, 1, st.label, t0, now);
    ++w.lanes[size_t(lane)].step;
    run_step(di, lane);
  };
  if (!full_) {
    comm_.run_phases(phases, 0, done);
    return;
  }
  const int64_t group = plan_.groups.experts_across_tp()
                            ? d.coord.stage * plan_.groups.expert_ranks() + plan_.expert_rank(d.coord) / ep
                            : (d.coord.stage * plan_.groups.dense_dp + d.coord.dp / ep) * plan_.groups.tp + d.coord.tp;
  comm_.run_joined(CollectiveRunner::join_key(CollectiveRunner::kEpGroup, lane, group, seq), ep, di, phases, done);
}

}  // namespace dtsim::replay
