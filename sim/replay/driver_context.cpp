#include "replay/driver.hpp"

namespace dtsim::replay {

// ---- context parallelism ---------------------------------------------------------------------------------
// Ring attention: the keys and values of every cp rank go round the ring, one neighbour at a time, while the rank
// computes attention on the blocks it already has. Forward: a ring all-gather of K and V; backward: K and V go
// round again and dK, dV come back reduced, the traffic of a ring all-reduce. Folded, the representative's ring
// runs with the rings of the other TP ranks, which share its nodes.
void Driver::cp_ring(size_t di, const Step& st, std::function<void()> done)
{
  Device& d = devices_[di];
  const int64_t seq = d.cp_seq++, cp = s_.parallel.cp;
  const auto kind = st.collective == model::TpCollective::ContextGatherReduce ? collectives::Kind::AllReduce
                                                                                : collectives::Kind::AllGather;
  const int64_t group_key = full_ ? (d.coord.dp / cp) * s_.parallel.tp + d.coord.tp : int64_t(-1);
  auto key = std::make_tuple(d.coord.stage, group_key, int(kind), st.bytes);
  auto it = cp_plans_.find(key);
  if (it == cp_plans_.end()) {
    std::vector<collectives::Phase> phases;
    for (int64_t r = 0; r < s_.parallel.tp; ++r) {
      if (full_ && r != d.coord.tp)
        continue;
      merge_phases(phases, collectives::plan_collective(
                               kind, st.bytes, placement_.cp_group(d.coord.stage, d.coord.dp, r, cp), placement_));
    }
    it = cp_plans_.emplace(key, std::make_shared<const std::vector<collectives::Phase>>(std::move(phases))).first;
  }
  if (!full_) {
    run_phases(it->second, 0, std::move(done));
    return;
  }
  d.cp_done = std::move(done);
  Instance inst;
  const int64_t group = (d.coord.stage * s_.parallel.dp_cp() + d.coord.dp / cp) * s_.parallel.tp + d.coord.tp;
  if (!join({kCpGroup, group, seq}, cp, di, sg4::Engine::get_clock(), inst))
    return;
  run_phases(it->second, 0, [this, inst]() {
    for (size_t w : inst.waiters) {
      auto next = std::move(devices_[w].cp_done);
      next();
    }
  });
}

}  // namespace dtsim::replay
