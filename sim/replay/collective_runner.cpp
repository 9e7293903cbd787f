#include "replay/collective_runner.hpp"

#include <memory>

namespace dtsim::replay {

void CollectiveRunner::flow(int64_t src, int64_t dst, double bytes, std::function<void()> fn)
{
  const auto g = flow_segment(src, dst, bytes);
  acts_.flow(g.a, g.b, g.amount, g.latency_s, std::move(fn));
}

Activities::Segment CollectiveRunner::flow_segment(int64_t src, int64_t dst, double bytes) const
{
  // Within a node over NVLink, across nodes from NIC to NIC.
  bool local = folding_.layout().same_domain(src, dst);
  const int64_t a_at = placement_.cluster_device(src), b_at = placement_.cluster_device(dst);
  auto* a = local ? platform_->gpu(a_at) : platform_->nic(a_at);
  auto* b = local ? platform_->gpu(b_at) : platform_->nic(b_at);
  // A device's route to itself has no link and no latency, as SimGrid's comms had it.
  return {Activities::Segment::Kind::Flow, a, b, bytes, a == b ? 0.0 : platform_->route_latency(local)};
}

void CollectiveRunner::pipeline_flow(int64_t src, int64_t dst, double bytes, std::function<void()> fn)
{
  auto it = pipeline_copies_.find({src, dst});
  if (it == pipeline_copies_.end())
    it = pipeline_copies_.emplace(std::make_pair(src, dst), folding_.shared_copies({src, dst, bytes}, 1, true)).first;
  const auto& copies = it->second;
  if (copies.empty()) {
    flow(src, dst, bytes, std::move(fn));
    return;
  }
  auto pending = std::make_shared<size_t>(1 + copies.size());
  auto shared_fn = std::make_shared<std::function<void()>>(std::move(fn));
  auto arrived = [pending, shared_fn]() {
    if (--*pending == 0)
      (*shared_fn)();
  };
  flow(src, dst, bytes, arrived);
  for (const auto& c : copies)
    flow(c.src, c.dst, bytes, arrived);
}

bool CollectiveRunner::one_flow_phases(const std::vector<collectives::Phase>& phases, size_t from)
{
  for (size_t k = from; k < phases.size(); ++k)
    if (phases[k].flows.size() > 1)
      return false;
  return true;
}

void CollectiveRunner::append_phase_segments(const std::vector<collectives::Phase>& phases, size_t from,
                                             bool first_delay_paid, std::vector<Activities::Segment>& segments) const
{
  for (size_t k = from; k < phases.size(); ++k) {
    const auto& ph = phases[k];
    const double delay = k == from && first_delay_paid ? 0.0 : phase_delay(ph);
    if (delay > 0)
      segments.push_back({Activities::Segment::Kind::Delay, nullptr, nullptr, delay, 0.0});
    if (!ph.flows.empty())
      segments.push_back(flow_segment(ph.flows.front().src, ph.flows.front().dst, ph.flows.front().bytes));
  }
}

void CollectiveRunner::run_phases(Phases phases, size_t i, std::function<void()> done, bool delay_paid)
{
  if (i >= phases->size()) {
    done();
    return;
  }
  // One flow per phase (a ring or a tree folded onto its busiest member, most collectives of a folded replay): the
  // phases are one sequence, a single timer while their links carry nothing else, with the dates of the phases run
  // one after the other.
  if (one_flow_phases(*phases, i)) {
    std::vector<Activities::Segment> segments;
    append_phase_segments(*phases, i, delay_paid, segments);
    if (segments.size() >= 2) {
      acts_.sequence(std::move(segments), [done = std::move(done)](const std::vector<double>&) { done(); });
      return;
    }
  }
  const auto& ph = (*phases)[i];
  auto start_flows = [this, phases, i, done]() {
    const auto& ph = (*phases)[i];
    auto pending = std::make_shared<size_t>(ph.flows.size());
    if (ph.flows.empty()) {
      run_phases(phases, i + 1, done);
      return;
    }
    for (const auto& f : ph.flows)
      flow(f.src, f.dst, f.bytes, [this, phases, i, done, pending]() {
        if (--*pending == 0)
          run_phases(phases, i + 1, done);
      });
  };
  const double delay = delay_paid ? 0.0 : phase_delay(ph);
  if (delay > 0)
    acts_.delay(delay, start_flows);
  else
    start_flows();
}

void CollectiveRunner::run_joined(const JoinKey& key, int64_t members, size_t di, Phases phases,
                                  std::function<void()> done)
{
  joined_done_[key].push_back(std::move(done));
  Instance inst;
  if (!join(key, members, di, Activities::now(), inst))
    return;
  auto dones = std::make_shared<std::vector<std::function<void()>>>(std::move(joined_done_[key]));
  joined_done_.erase(key);
  run_phases(phases, 0, [this, dones, joined = Activities::now()]() {
    joined_t_ = joined;
    for (auto& f : *dones)
      f();
  });
}

bool CollectiveRunner::join(const JoinKey& key, int64_t members, size_t di, double t0, Instance& out)
{
  Instance& inst = instances_[key];
  inst.waiters.push_back(di);
  inst.arrival_t.push_back(t0);
  if (int64_t(inst.waiters.size()) < members)
    return false;
  out = std::move(inst);
  instances_.erase(key);
  return true;
}

}  // namespace dtsim::replay
