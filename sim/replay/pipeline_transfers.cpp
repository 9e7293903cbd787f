#include "replay/pipeline_transfers.hpp"

#include <algorithm>
#include <string>

namespace dtsim::replay {

using parallel::UnitId;

PipelineTransfers::PipelineTransfers(const parallel::PipelineSchedule& sched, const StepProgram& prog,
                                     const parallel::Placement& placement, CollectiveRunner& comm, Trace& trace,
                                     int64_t replicas, bool asynchronous, Exchanged exchanged, Arrived arrived)
    : sched_(sched), prog_(prog), placement_(placement), comm_(comm), trace_(trace), asynchronous_(asynchronous),
      exchanged_(std::move(exchanged)), arrived_(std::move(arrived))
{
  const int64_t units = int64_t(boost::num_vertices(sched.graph));
  recv_from_.assign(size_t(units), -1);
  send_to_.assign(size_t(units), -1);
  for (auto [e, end] = boost::edges(sched.graph); e != end; ++e) {
    if (sched.graph[*e].kind != parallel::EdgeKind::Data)
      continue;
    UnitId a = boost::source(*e, sched.graph), b = boost::target(*e, sched.graph);
    if (sched.graph[a].stage != sched.graph[b].stage) {
      recv_from_[b] = int64_t(a);
      send_to_[a] = int64_t(b);
    }
  }
  arrivals_.assign(size_t(replicas * units), Arrival{});
  transfers_.assign(size_t(replicas * units), Transfer{});
}

void PipelineTransfers::add_device(int64_t device, const parallel::Coord& coord, int64_t replica)
{
  index_of_[{coord.stage, replica}] = ends_.size();
  Endpoint e;
  e.device = device;
  e.coord = coord;
  e.replica = replica;
  ends_.push_back(std::move(e));
}

std::set<std::pair<int64_t, int64_t>> PipelineTransfers::stage_pairs() const
{
  // Marked in a table of stage pairs, then listed: a set's insert for each of Megatron 1T's 65,536 units cost more.
  const size_t stages = sched_.order.size();
  std::vector<char> seen(stages * stages, 0);
  for (size_t u = 0; u < recv_from_.size(); ++u)
    if (recv_from_[u] >= 0)
      seen[size_t(sched_.graph[UnitId(recv_from_[u])].stage) * stages + size_t(sched_.graph[UnitId(u)].stage)] = 1;
  std::set<std::pair<int64_t, int64_t>> pairs;
  for (size_t i = 0; i < seen.size(); ++i)
    if (seen[i])
      pairs.insert({int64_t(i / stages), int64_t(i % stages)});
  return pairs;
}

size_t PipelineTransfers::index(int64_t replica, UnitId consumer) const
{
  return size_t(replica) * boost::num_vertices(sched_.graph) + size_t(consumer);
}

bool PipelineTransfers::exchange_due(size_t di, size_t pos) const
{
  const Endpoint& e = ends_[di];
  const auto& order = sched_.order[size_t(e.coord.stage)];
  const bool end = pos >= order.size();
  const int64_t g = end ? -1 : sched_.group[size_t(e.coord.stage)][pos];
  return (!end && g != e.exchanged_group) || (end && !e.final_exchange_done);
}

void PipelineTransfers::start_exchange(size_t di, size_t pos)
{
  Endpoint& e = ends_[di];
  const auto& order = sched_.order[size_t(e.coord.stage)];
  const auto& groups = sched_.group[size_t(e.coord.stage)];
  const int64_t group = pos >= order.size() ? -1 : groups[pos];
  e.entered = Activities::now();
  e.group = group;
  e.transfers.clear();
  e.pending = 0;
  // The transfers: its sends first, then its receives (posting starts flows, whose ends come later, as events).
  for (UnitId u : e.unsent)
    e.transfers.push_back(index(e.replica, UnitId(send_to_[u])));
  const size_t sends = e.transfers.size();
  e.unsent.clear();
  if (group >= 0)
    for (size_t p = pos; p < order.size() && groups[p] == group; ++p)
      if (recv_from_[order[p]] >= 0)
        e.transfers.push_back(index(e.replica, order[p]));
  e.pending = int64_t(e.transfers.size());
  if (e.transfers.empty()) {
    finish_exchange(di);
    return;
  }
  for (size_t i = 0; i < e.transfers.size(); ++i)
    post_transfer(e.transfers[i], di, i < sends);
}

void PipelineTransfers::post_transfer(size_t id, size_t di, bool as_sender)
{
  Transfer& t = transfers_[id];
  (as_sender ? t.sender_posted : t.receiver_posted) = true;
  (as_sender ? t.sender : t.receiver) = di;
  if (!t.sender_posted || !t.receiver_posted)
    return;
  t.start = Activities::now();
  static const std::string label = "pipeline send";
  comm_.pipeline_flow(ends_[t.sender].device, ends_[t.receiver].device, prog_.send_bytes, [this, id]() {
    Transfer& t = transfers_[id];
    t.end = Activities::now();
    trace_.add(ends_[t.sender].device, 2, label, t.start, t.end);
    for (size_t side : {t.sender, t.receiver})
      if (--ends_[side].pending == 0)
        finish_exchange(side);
  });
}

void PipelineTransfers::finish_exchange(size_t di)
{
  Endpoint& e = ends_[di];
  const double now = Activities::now();
  // Time spent while one of this exchange's transfers was moving data is exposed pipeline communication;
  // the rest is waiting for a neighbour.
  std::vector<std::pair<double, double>>& busy = busy_;  // kept between calls: one exchange per unit
  busy.clear();
  for (size_t id : e.transfers)
    busy.push_back({std::max(transfers_[id].start, e.entered), std::min(transfers_[id].end, now)});
  std::sort(busy.begin(), busy.end());
  double covered = 0, reach = e.entered;
  for (const auto& [a, b] : busy) {
    double from = std::max(a, reach);
    if (b > from) {
      covered += b - from;
      reach = b;
    }
  }
  if (e.group >= 0)
    e.exchanged_group = e.group;
  else
    e.final_exchange_done = true;
  exchanged_(di, e.entered, covered);
}

void PipelineTransfers::unit_done(size_t di, UnitId u)
{
  if (send_to_[u] < 0)
    return;
  if (asynchronous_)
    send(di, UnitId(send_to_[u]));
  else
    ends_[di].unsent.push_back(u);
}

bool PipelineTransfers::input_ready(size_t di, UnitId u)
{
  if (recv_from_[u] < 0)
    return true;
  Arrival& a = arrivals_[index(ends_[di].replica, u)];
  if (!a.arrived)
    a.waiting = true;  // send() calls back once it has arrived
  return a.arrived;
}

void PipelineTransfers::send(size_t di, UnitId to)
{
  const Endpoint& e = ends_[di];
  const auto& target = sched_.graph[to];
  int64_t dst = placement_.device({target.stage, e.coord.dp, e.coord.tp});
  int64_t replica = e.replica;
  double t0 = Activities::now();
  static const std::string label = "pipeline send";
  int64_t src = e.device;
  comm_.pipeline_flow(src, dst, prog_.send_bytes, [this, replica, to, t0, src]() {
    double now = Activities::now();
    trace_.add(src, 2, label, t0, now);
    Arrival& a = arrivals_[index(replica, to)];
    a.arrived = true;
    a.send_start = t0;
    if (a.waiting) {
      a.waiting = false;
      arrived_(index_of_.at({sched_.graph[to].stage, replica}));
    }
  });
}

}  // namespace dtsim::replay
