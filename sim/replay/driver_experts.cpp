#include "replay/driver.hpp"

#include <set>

#include "model/node_limited_routing.hpp"

namespace dtsim::replay {

// ---- mixture of experts ----------------------------------------------------------------------------------
// Token dispatch and combine: an all-to-all over the expert-parallel group (ep data-parallel ranks of the same
// stage and tensor-parallel rank). Folded, the representative's group runs with the groups of the other TP ranks,
// which share its nodes' NICs; the groups of other data-parallel ranks sit on other nodes.
void Driver::ep_collective(size_t di, const Step& st, double t0)
{
  Device& d = devices_[di];
  const int64_t seq = d.ep_seq++, ep = s_.parallel.ep;
  // Node-limited routing (DeepSeek-V3): each token crosses to at most M of the group's nodes, once per node.
  std::set<int64_t> nodes;
  for (int64_t dev : placement_.rank_group(d.coord.stage, d.coord.dp, d.coord.tp, ep))
    nodes.insert(placement_.node_of(dev));
  const double scale = model::node_limited_inter_node_scale(s_.model, int64_t(nodes.size()));
  Phases phases = rank_group_phases(d, collectives::Kind::AllToAll, st.bytes, ep, scale);
  auto done = [this, di, t0, &st]() {
    Device& w = devices_[di];
    const double now = sg4::Engine::get_clock();
    w.b.exposed_ep_comm_s += now - t0;
    trace_.add(w.id, 1, st.label, t0, now);
    w.free_t = now;
    ++w.step;
    run_step(di);
  };
  if (!full_) {
    run_phases(phases, 0, done);
    return;
  }
  const int64_t group = (d.coord.stage * s_.parallel.dp_cp() + d.coord.dp / ep) * s_.parallel.tp + d.coord.tp;
  run_joined({kEpGroup, group, seq}, ep, di, phases, done);
}

}  // namespace dtsim::replay
