#include "replay/driver.hpp"

namespace dtsim::replay {

// ---- mixture of experts ----------------------------------------------------------------------------------
// Token dispatch and combine: an all-to-all over the expert-parallel group (ep data-parallel ranks of the same
// stage and tensor-parallel rank). Folded, the representative's group runs with the groups of the other TP ranks,
// which share its nodes' NICs; the groups of other data-parallel ranks sit on other nodes.
void Driver::ep_collective(size_t di, const Step& st, double t0)
{
  Device& d = devices_[di];
  const int64_t seq = d.ep_seq++, ep = s_.parallel.ep;
  // Full fidelity: one plan per EP group and TP rank; folded: one per stage (the representative's group).
  const int64_t group_key = full_ ? (d.coord.dp / ep) * s_.parallel.tp + d.coord.tp : int64_t(-1);
  auto key = std::make_tuple(d.coord.stage, group_key, st.bytes);
  auto it = ep_plans_.find(key);
  if (it == ep_plans_.end()) {
    std::vector<collectives::Phase> phases;
    for (int64_t r = 0; r < s_.parallel.tp; ++r) {
      if (full_ && r != d.coord.tp)
        continue;
      merge_phases(phases, collectives::plan_collective(collectives::Kind::AllToAll, st.bytes,
                                                        placement_.ep_group(d.coord.stage, d.coord.dp, r, ep),
                                                        placement_));
    }
    it = ep_plans_.emplace(key, std::make_shared<const std::vector<collectives::Phase>>(std::move(phases))).first;
  }
  auto finish = [this, &st](size_t wi, double arrived_t) {
    Device& w = devices_[wi];
    const double now = sg4::Engine::get_clock();
    w.b.exposed_ep_comm_s += now - arrived_t;
    trace_.add(w.id, 1, st.label, arrived_t, now);
    w.free_t = now;
    ++w.step;
    run_step(wi);
  };
  if (!full_) {
    run_phases(it->second, 0, [finish, di, t0]() { finish(di, t0); });
    return;
  }
  Instance inst;
  const int64_t group = (d.coord.stage * s_.parallel.dp + d.coord.dp / ep) * s_.parallel.tp + d.coord.tp;
  if (!join({kEpGroup, group, seq}, ep, di, t0, inst))
    return;
  run_phases(it->second, 0, [finish, inst]() {
    for (size_t i = 0; i < inst.waiters.size(); ++i)
      finish(inst.waiters[i], inst.arrival_t[i]);
  });
}

}  // namespace dtsim::replay
