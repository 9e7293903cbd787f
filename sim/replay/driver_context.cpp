#include "replay/driver.hpp"

namespace dtsim::replay {

// ---- context parallelism ---------------------------------------------------------------------------------
// Ring attention: the keys and values of every cp rank go round the ring, one neighbour at a time, while the rank
// computes attention on the blocks it already has. Forward: a ring all-gather of K and V; backward: K and V go
// round again and dK, dV come back reduced, the traffic of a ring all-reduce. Folded, the representative's ring
// runs with the rings of the other TP ranks, which share its nodes.
void Driver::cp_ring(size_t di, int lane, const Step& st, std::function<void()> done)
{
  Device& d = devices_[di];
  const int64_t seq = d.lanes[size_t(lane)].cp_seq++, cp = plan_.groups.cp;
  Phases phases = groups_.cp(d.id, collectives::kind_of(st.collective), st.bytes);
  if (!full_) {
    comm_.run_phases(phases, 0, std::move(done));
    return;
  }
  const int64_t group = (d.coord.stage * plan_.groups.dense_dp + d.coord.dp / cp) * plan_.groups.tp + d.coord.tp;
  comm_.run_joined(CollectiveRunner::join_key(CollectiveRunner::kCpGroup, lane, group, seq), cp, di, phases,
                   std::move(done));
}

// torch.compile's context parallelism (torchtitan): the collective is waited for where it is issued, so the device
// does nothing else meanwhile; its time is the exposed context-parallel communication.
void Driver::cp_blocking(size_t di, int lane, const Step& st, double t0)
{
  cp_ring(di, lane, st,
          [this, di, lane, t0, &st]() { finish_blocking(di, lane, st, t0, &Breakdown::exposed_cp_comm_s); });
}

}  // namespace dtsim::replay
