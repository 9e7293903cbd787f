#include "replay/activities.hpp"

#include <xbt/log.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/diagnostics.hpp"
#include "platform/cluster_platform.hpp"

namespace dtsim::replay {

namespace sg4 = simgrid::s4u;

namespace {
// SimGrid 3.32's signals are static and cannot be disconnected: one callback per process dispatches to the
// activities object of the run in progress.
Activities* g_current = nullptr;
bool g_connected = false;
}  // namespace

double Activities::now_ = 0;

Activities::Activities()
{
  int argc = 1;
  char name[] = "dtsim";
  char* argv[] = {name, nullptr};
  xbt_log_control_set("root.thresh:critical");
  engine_ = std::make_unique<sg4::Engine>(&argc, argv);
  // SimGrid's loop ends its run at the end of a round where this set is not empty (EngineImpl::run, 3.32): how an
  // own event set from inside the loop gets control back (nothing here is ever vetoed).
  engine_->track_vetoed_activities(&stop_requests_);
  now_ = 0;
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:0");
  g_current = this;
  if (!g_connected) {
    g_connected = true;
    sg4::Activity::on_completion_cb(&Activities::on_completion);
  }
}

Activities::~Activities()
{
  if (g_current == this)
    g_current = nullptr;
}

void Activities::on_completion(sg4::Activity const& a)
{
  if (g_current == nullptr)
    return;
  auto* h = a.get_data<Handler>();
  now_ = sg4::Engine::get_clock();
  if (h == &g_current->occupier_mark_) {
    // A released occupier completes twice: when cancel() is called, then when the engine ends its action. Only
    // after the second may it go (once this callback is over).
    auto it = g_current->occupiers_.find(&a);
    if (it != g_current->occupiers_.end() && ++it->second.completions == 2) {
      g_current->graveyard_.push_back(std::move(it->second.exec));
      g_current->occupiers_.erase(it);
    }
    return;
  }
  if (h && a.get_state() == sg4::Activity::State::FINISHED) {
    --g_current->simgrid_in_flight_;
    g_current->dispatch(h);
  }
}

namespace {
// A comm's payload: whole bytes, at least one (SimGrid's payload size).
uint64_t payload_bytes(double bytes)
{
  return uint64_t(std::max(bytes, 1.0));
}

// When `work` at `rate` started at `t` ends, alone (nothing: no rate, as a link-less route).
double end_alone(double t, double rate, double work)
{
  return t + (rate > 0 ? work / rate : 0.0);
}

// An element of `pool` to reuse from `free`, else a new one (a deque never moves its elements).
template <class T>
T* take(std::deque<T>& pool, std::vector<T*>& free)
{
  if (free.empty())
    return &pool.emplace_back();
  T* t = free.back();
  free.pop_back();
  return t;
}
}  // namespace

Activities::Handler* Activities::handler(std::function<void()> fn)
{
  Handler* h = take(handlers_, free_);
  h->fn = std::move(fn);
  ++count_;
  return h;
}

void Activities::dispatch(Handler* h)
{
  // The activity completing now must not lose its last reference inside its own callback: release the
  // previous ones instead.
  graveyard_.clear();
  if (!ended_execs_.empty() || !ended_comms_.empty())  // most ends are own events': nothing to recycle
    recycle_ended();
  if (h->exec)
    ended_execs_.push_back(std::move(h->exec));
  if (h->comm)
    ended_comms_.push_back(std::move(h->comm));
  count_on(h->counted, -1);
  h->counted = nullptr;
  auto fn = std::move(h->fn);
  free_.push_back(h);
  fn();
}

void Activities::exec(sg4::Host* host, double seconds, std::function<void()> done)
{
  Handler* h = handler(std::move(done));
  const HostResource& hr = host_resource(host);
  const double flops = std::max(seconds, 0.0) * platform::kHostSpeed;
  if (claim(hr.use)) {
    start_solo(h, host, nullptr, nullptr, hr.use, exec_rate(uses_[hr.use.front()], hr.speed), flops);
  } else {
    start_exec(host, flops, h, &hr.use);
  }
}

void Activities::start_exec(sg4::Host* host, double flops, Handler* h, const Resources* counted)
{
  sync_simgrid();
  ++simgrid_in_flight_;
  count_on(counted, 1);
  h->counted = counted;
  if (idle_execs_.empty()) {
    auto e = sg4::Exec::init()->set_flops_amount(flops)->set_host(host);
    e->set_data(h);
    h->exec = e;
    e->start();
    return;
  }
  // A completed exec, set up again as SimGrid's own Comm::sendto_init sets a comm (Activity::set_state STARTING):
  // its work and host replaced (ExecImpl's flops and hosts, an assignment each), its priority never set. Setting
  // the host of a STARTING exec starts it (Exec::set_host: vetoable_start, which finds it assigned).
  h->exec = std::move(idle_execs_.back());
  idle_execs_.pop_back();
  h->exec->set_state(sg4::Activity::State::STARTING);
  h->exec->set_flops_amount(flops);
  h->exec->set_data(h);
  h->exec->set_host(host);
}

void Activities::recycle_ended()
{
  for (auto& e : ended_execs_)
    idle_execs_.push_back(std::move(e));
  ended_execs_.clear();
  for (auto& c : ended_comms_) {
    const auto key = std::make_pair(static_cast<const void*>(c->get_source()),
                                    static_cast<const void*>(c->get_destination()));
    idle_comms_[key].push_back(std::move(c));
  }
  ended_comms_.clear();
}

Activities::Occupation* Activities::occupy(sg4::Host* host, double share)
{
  const HostResource& hr = host_resource(host);
  Use& use = uses_[hr.use.front()];
  for (size_t i = 0; i < use.solo.size();)  // a sequence's kernel takes the occupation's rate alone
    if (use.solo[i]->sequence != nullptr && use.solo[i]->ends > now_)
      split_sequence(use.solo[i]);
    else
      ++i;
  Occupation* o = take(occupations_, occupations_free_);
  *o = Occupation{host, &hr, share, nullptr};
  if (use.simgrid == 0 && share < 1.0) {
    // Nothing on the host but, at most, a kernel timed alone and other occupations: they are that kernel's rate.
    use.occupations.push_back(o);
    if (Solo* s = running_solo(use))
      set_solo_rate(s, exec_rate(use, hr.speed));
    return o;
  }
  while (!use.occupations.empty())
    materialize(use.occupations.back());
  claim(hr.use);  // the exec it shares with becomes SimGrid's
  materialize(o);
  return o;
}

double Activities::exec_rate(const Use& use, double speed)
{
  if (use.occupations.empty())
    return speed;
  if (use.occupations.size() == 1)  // the same rate as the general form, to the last bit as before it
    return speed * (1.0 - use.occupations.front()->share);
  // SimGrid shares a host in proportion to priorities: the exec's 1 against each occupation's s / (1 - s).
  double weights = 1.0;
  for (const Occupation* o : use.occupations)
    weights += o->share / (1.0 - o->share);
  return speed / weights;
}

// The occupation as a SimGrid exec: enough work never to finish before release(); its end dispatches nothing.
// SimGrid shares a host between its execs in proportion to their priorities: share / (1 - share) against the other
// exec's 1 gives it `share`.
void Activities::materialize(Occupation* o)
{
  Use& use = uses_[o->resource->use.front()];
  auto it = std::find(use.occupations.begin(), use.occupations.end(), o);
  if (it != use.occupations.end())
    use.occupations.erase(it);
  sync_simgrid();
  ++simgrid_in_flight_;
  count_on(&o->resource->use, 1);
  auto e = sg4::Exec::init()->set_flops_amount(1e30)->set_host(o->host)->set_priority(o->share / (1.0 - o->share));
  e->set_data(&occupier_mark_);
  occupiers_[e.get()] = {e, 0, &o->resource->use};
  e->start();
  o->exec = e.get();
}

void Activities::release(Occupation* o)
{
  if (o->exec == nullptr) {
    Use& use = uses_[o->resource->use.front()];
    use.occupations.erase(std::find(use.occupations.begin(), use.occupations.end(), o));
    if (Solo* s = running_solo(use))
      set_solo_rate(s, exec_rate(use, o->resource->speed));
  } else {
    // SimGrid 3.32 keeps a cancelled actor-less exec's share of the host until the host's next completion
    // (checked on a two-exec example): drop its priority to nothing first, so that its share ends now.
    sync_simgrid();
    --simgrid_in_flight_;
    o->exec->update_priority(1e-12);
    o->exec->cancel();
    auto it = occupiers_.find(o->exec);
    if (it != occupiers_.end()) {
      count_on(it->second.counted, -1);
      it->second.counted = nullptr;
    }
  }
  occupations_free_.push_back(o);
}

void Activities::delay(double seconds, std::function<void()> done)
{
  ++count_;
  at(now_ + std::max(seconds, 0.0), std::move(done));
}

void Activities::comm(sg4::Host* a, sg4::Host* b, double bytes, std::function<void()> done)
{
  start_comm(a, b, payload_bytes(bytes), handler(std::move(done)), nullptr);
}

void Activities::flow(sg4::Host* a, sg4::Host* b, double bytes, double latency_s, std::function<void()> done)
{
  Handler* h = handler(std::move(done));
  const uint64_t payload = payload_bytes(bytes);
  if (latency_s > 0)
    at(now_ + latency_s, [this, a, b, payload, h]() { send(a, b, payload, h); });
  else
    send(a, b, payload, h);
}

void Activities::send(sg4::Host* a, sg4::Host* b, uint64_t bytes, Handler* h)
{
  const Route& r = route(a, b);
  if (claim(r.links))
    start_solo(h, nullptr, a, b, r.links, r.solo_Bps, double(bytes));
  else
    start_comm(a, b, bytes, h, &r.links);
}

void Activities::start_comm(sg4::Host* a, sg4::Host* b, uint64_t bytes, Handler* h, const Resources* counted)
{
  sync_simgrid();
  ++simgrid_in_flight_;
  count_on(counted, 1);
  h->counted = counted;
  auto& idle = idle_comms_[std::make_pair(static_cast<const void*>(a), static_cast<const void*>(b))];
  if (idle.empty()) {
    h->comm = sg4::Comm::sendto_init(a, b)->set_payload_size(bytes);
  } else {
    // A completed comm of this route, set up again as Comm::sendto_init(a, b) sets a new one: its size replaced
    // (CommImpl::set_size), then started (a new network action, CommImpl::start).
    h->comm = std::move(idle.back());
    idle.pop_back();
    h->comm->set_state(sg4::Activity::State::STARTING);
    h->comm->set_payload_size(bytes);
  }
  h->comm->set_data(h);
  h->comm->start();
}

// ---- activities timed alone ----------------------------------------------------------------------------------

bool Activities::claim(const Resources& resources)
{
  const double t = now();
  bool free = true;
  for (size_t r : resources) {
    Use& use = uses_[r];
    bool busy = use.simgrid > 0;
    for (size_t i = 0; i < use.solo.size();) {
      if (use.solo[i]->ends > t && use.solo[i]->sequence != nullptr) {
        split_sequence(use.solo[i]);  // takes it off this list; its running segment may come onto it
      } else if (use.solo[i]->ends > t) {  // still running: it shares from now on
        busy = true;
        hand_to_simgrid(use.solo[i]);  // takes it off this list
      } else {
        ++i;  // ends now: its timer is due
      }
    }
    while (busy && !use.occupations.empty())  // another exec on the host: SimGrid shares them all
      materialize(use.occupations.back());
    free = free && !busy;
  }
  return free;
}

Activities::Solo* Activities::running_solo(const Use& use)
{
  for (Solo* s : use.solo)
    if (s->ends > now())
      return s;
  return nullptr;
}

// Its rate changes now (an occupation begins or ends): the work it has left at the new rate.
void Activities::set_solo_rate(Solo* s, double rate)
{
  const double t = now();
  const double left = (s->ends - t) * s->rate;
  s->rate = rate;
  s->ends = t + left / rate;
  reschedule(s->timer, s->ends);
}

void Activities::start_solo(Handler* h, sg4::Host* host, sg4::Host* a, sg4::Host* b, const Resources& resources,
                            double rate, double work)
{
  start_solo_until(h, host, a, b, resources, rate, end_alone(now(), rate, work));
}

Activities::Solo* Activities::start_solo_until(Handler* h, sg4::Host* host, sg4::Host* a, sg4::Host* b,
                                               const Resources& resources, double rate, double ends)
{
  Solo* s = take(solo_pool_, solo_free_);
  *s = Solo{h, host, a, b, &resources, rate, ends, 0, nullptr};
  for (size_t r : resources)
    uses_[r].solo.push_back(s);
  schedule_end(s);
  return s;
}

// ---- sequences --------------------------------------------------------------------------------------------------

void Activities::sequence(std::vector<Segment> segments, std::function<void(const std::vector<double>&)> done)
{
  Sequence* q = take(sequences_, sequences_free_);
  q->segments = std::move(segments);
  q->ends.assign(q->segments.size(), now_);
  q->sends.assign(q->segments.size(), now_);
  q->done = std::move(done);
  continue_sequence(q, 0);
}

void Activities::continue_sequence(Sequence* q, size_t from)
{
  const size_t n = q->segments.size();
  if (from >= n) {
    auto done = std::move(q->done);
    const std::vector<double> ends = std::move(q->ends);
    q->done = nullptr;
    q->segments.clear();
    q->resources.clear();
    sequences_free_.push_back(q);
    done(ends);
    return;
  }
  if (n - from >= 2) {
    // What the rest uses, and each segment's end as exec(), delay() and flow() would time it alone, one after
    // the other (kept only if the rest is timed as one).
    q->resources.clear();
    double t = now_;
    for (size_t k = from; k < n; ++k) {
      const Segment& g = q->segments[k];
      if (g.kind == Segment::Kind::Exec) {
        const HostResource& hr = host_resource(g.a);
        q->resources.insert(q->resources.end(), hr.use.begin(), hr.use.end());
        t = end_alone(t, hr.speed, std::max(g.amount, 0.0) * platform::kHostSpeed);
      } else if (g.kind == Segment::Kind::Delay) {
        t = t + std::max(g.amount, 0.0);
      } else {
        const Route& r = route(g.a, g.b);
        q->resources.insert(q->resources.end(), r.links.begin(), r.links.end());
        if (g.latency_s > 0)
          t = t + g.latency_s;
        q->sends[k] = t;
        t = end_alone(t, r.solo_Bps, double(payload_bytes(g.amount)));
      }
      q->ends[k] = t;
    }
    std::sort(q->resources.begin(), q->resources.end());
    q->resources.erase(std::unique(q->resources.begin(), q->resources.end()), q->resources.end());
    bool free = true;
    for (size_t r : q->resources) {
      const Use& use = uses_[r];
      free = free && use.simgrid == 0 && use.occupations.empty() && running_solo(use) == nullptr;
    }
    if (free) {
      count_ += int64_t(n - from);  // as each would count itself
      Handler* h = take(handlers_, free_);
      h->fn = [this, q, n]() { continue_sequence(q, n); };
      start_solo_until(h, nullptr, nullptr, nullptr, q->resources, 0.0, t)->sequence = q;
      return;
    }
  }
  const Segment g = q->segments[from];
  auto next = [this, q, from]() {
    q->ends[from] = now_;
    continue_sequence(q, from + 1);
  };
  if (g.kind == Segment::Kind::Exec)
    exec(g.a, g.amount, std::move(next));
  else if (g.kind == Segment::Kind::Delay)
    delay(g.amount, std::move(next));
  else
    flow(g.a, g.b, g.amount, g.latency_s, std::move(next));
}

void Activities::split_sequence(Solo* s)
{
  Sequence* q = s->sequence;
  const double t = now_;
  cancel(s->timer);
  forget_solo(s);
  s->h->fn = nullptr;  // the end of the whole, which will not come
  free_.push_back(s->h);
  solo_free_.push_back(s);
  const size_t n = q->segments.size();
  size_t k = 0;
  while (q->ends[k] <= t)  // the segment running now (the whole ends after t)
    ++k;
  count_ -= int64_t(n - k - 1);  // those after it count again when they start
  const Segment g = q->segments[k];
  Handler* h = take(handlers_, free_);
  h->fn = [this, q, k]() {
    q->ends[k] = now_;
    continue_sequence(q, k + 1);
  };
  if (g.kind == Segment::Kind::Exec) {
    const HostResource& hr = host_resource(g.a);
    start_solo_until(h, g.a, nullptr, nullptr, hr.use, hr.speed, q->ends[k]);
  } else if (g.kind == Segment::Kind::Delay) {
    at(q->ends[k], [this, h]() { dispatch(h); });
  } else if (t < q->sends[k]) {  // still in its latency: it sends then, as flow() would
    const uint64_t payload = payload_bytes(g.amount);
    at(q->sends[k], [this, g, payload, h]() { send(g.a, g.b, payload, h); });
  } else {
    const Route& r = route(g.a, g.b);
    start_solo_until(h, nullptr, g.a, g.b, r.links, r.solo_Bps, q->ends[k]);
  }
}

void Activities::schedule_end(Solo* s)
{
  s->timer = at(s->ends, [this, s]() { end_solo(s); });
}

// Alone on its resources until now, it has done its work at its rate: what is left goes to SimGrid, which shares
// it from now on. A comm's payload is whole bytes (half a byte: 1e-11 s on a 48 GB/s link).
void Activities::hand_to_simgrid(Solo* s)
{
  const double left = (s->ends - now()) * s->rate;
  cancel(s->timer);
  forget_solo(s);
  const Solo was = *s;
  solo_free_.push_back(s);
  if (was.host != nullptr)
    start_exec(was.host, left, was.h, was.resources);
  else
    start_comm(was.a, was.b, uint64_t(std::max(std::llround(left), 1LL)), was.h, was.resources);
}

void Activities::end_solo(Solo* s)
{
  forget_solo(s);
  Handler* h = s->h;
  solo_free_.push_back(s);
  dispatch(h);
}

void Activities::forget_solo(Solo* s)
{
  for (size_t r : *s->resources) {
    auto& solo = uses_[r].solo;
    auto it = std::find(solo.begin(), solo.end(), s);
    *it = solo.back();
    solo.pop_back();
  }
}

void Activities::count_on(const Resources* resources, int64_t delta)
{
  if (resources != nullptr)
    for (size_t r : *resources)
      uses_[r].simgrid += delta;
}

size_t Activities::resource_index(const void* resource)
{
  auto [it, added] = resource_index_.try_emplace(resource, uses_.size());
  if (added)
    uses_.emplace_back();
  return it->second;
}

const Activities::HostResource& Activities::host_resource(sg4::Host* host)
{
  auto it = hosts_.find(host);
  if (it != hosts_.end())
    return it->second;
  // Cas01: an exec runs on one core at the host's speed whatever else the host does, and alone it gets that.
  HostResource hr;
  hr.use = {resource_index(host)};
  hr.speed = host->get_speed();
  return hosts_.emplace(host, std::move(hr)).first->second;
}

const Activities::Route& Activities::route(sg4::Host* a, sg4::Host* b)
{
  const auto key = std::make_pair(static_cast<const void*>(a), static_cast<const void*>(b));
  auto it = routes_.find(key);
  if (it != routes_.end())
    return it->second;
  std::vector<sg4::Link*> path;
  double latency = 0;
  a->route_to(b, path, &latency);
  if (latency != 0)
    throw InternalError("flows need a platform whose links carry no latency; the route from " + a->get_name() +
                        " to " + b->get_name() + " has " + std::to_string(latency) + " s");
  // CM02 with bandwidth factor 1: a flow alone on its links gets the narrowest one's bandwidth (SimGrid's
  // comm_action_set_bounds).
  Route r;
  for (auto* l : path) {
    if (l->get_sharing_policy() != sg4::Link::SharingPolicy::SHARED)
      throw InternalError("flows need shared links; link " + l->get_name() + " has another sharing policy");
    if (r.solo_Bps == 0 || l->get_bandwidth() < r.solo_Bps)
      r.solo_Bps = l->get_bandwidth();
    r.links.push_back(resource_index(l));
  }
  return routes_.emplace(key, std::move(r)).first->second;
}

// ---- own events -----------------------------------------------------------------------------------------------

size_t Activities::at(double date, std::function<void()> fn)
{
  size_t slot;
  if (free_slots_.empty()) {
    slot = slots_.size();
    slots_.push_back({std::move(fn), 0});
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
    slots_[slot].fn = std::move(fn);
  }
  // Written in place: a temporary Event copied into the vector stalled on its own stores (perf: a third of at()).
  Event& e = events_.emplace_back();
  e.date = date;
  e.seq = seq_++;
  e.slot = slot;
  sift_up(events_.size() - 1);
  hand_back_before(date);
  return slot;
}

void Activities::reschedule(size_t slot, double date)
{
  const size_t i = slots_[slot].heap_index;
  // A new sequence number, as cancelling it and setting it again would give it: the same order of events.
  Event e = events_[i];
  e.date = date;
  e.seq = seq_++;
  place(i, e);
  resift(i);
  hand_back_before(date);
}

void Activities::hand_back_before(double date)
{
  // Set from inside SimGrid's loop before where it stops: the loop gives control back at the end of its round.
  if (in_simgrid_ && !syncing_ && (simgrid_until_ < 0 || date < simgrid_until_))
    stop_requests_.insert(nullptr);
}

void Activities::place(size_t i, const Event& e)
{
  events_[i] = e;
  slots_[e.slot].heap_index = i;
}

void Activities::sift_up(size_t i)
{
  const Event e = events_[i];
  while (i > 0 && e.before(events_[(i - 1) / 2])) {
    place(i, events_[(i - 1) / 2]);
    i = (i - 1) / 2;
  }
  place(i, e);
}

void Activities::sift_down(size_t i)
{
  const Event e = events_[i];
  const size_t n = events_.size();
  for (size_t child = 2 * i + 1; child < n; child = 2 * i + 1) {
    if (child + 1 < n && events_[child + 1].before(events_[child]))
      ++child;
    if (!events_[child].before(e))
      break;
    place(i, events_[child]);
    i = child;
  }
  place(i, e);
}

// Event i has just been written over: up or down to where the heap's order puts it.
void Activities::resift(size_t i)
{
  if (i > 0 && events_[i].before(events_[(i - 1) / 2]))
    sift_up(i);
  else
    sift_down(i);
}

// Takes event i out of the heap and frees its slot.
Activities::Event Activities::pop_event(size_t i)
{
  const Event e = events_[i];
  const Event last = events_.back();
  events_.pop_back();
  if (i < events_.size()) {
    place(i, last);
    resift(i);
  }
  slots_[e.slot].heap_index = kNotQueued;
  free_slots_.push_back(e.slot);
  return e;
}

void Activities::cancel(size_t slot)
{
  if (slots_[slot].heap_index == kNotQueued)
    return;  // it has run already
  slots_[slot].fn = nullptr;
  pop_event(slots_[slot].heap_index);
}

void Activities::run_next_event()
{
  const Event e = pop_event(0);
  auto fn = std::move(slots_[e.slot].fn);
  slots_[e.slot].fn = nullptr;
  now_ = std::max(now_, e.date);
  fn();
}

void Activities::sync_simgrid()
{
  if (in_simgrid_ || sg4::Engine::get_clock() >= now_)
    return;
  syncing_ = true;
  run_simgrid_until(now_);
  syncing_ = false;
}

bool Activities::run_simgrid_until(double date)
{
  in_simgrid_ = true;  // never nested: sync_simgrid does nothing inside the loop, and own events run outside it
  simgrid_until_ = date;
  if (date < 0) {
    engine_->run();
  } else {
    // SimGrid's loop may stop up to 1e-5 s short of the date asked (EngineImpl::run's double_equals): go on
    // until it is there.
    while (sg4::Engine::get_clock() < date && stop_requests_.empty())
      engine_->run_until(date);
  }
  const bool stopped = !stop_requests_.empty();
  stop_requests_.clear();
  in_simgrid_ = false;
  simgrid_until_ = -1;
  now_ = std::max(now_, sg4::Engine::get_clock());
  return stopped;
}

void Activities::run(const std::function<void()>& start)
{
  start();
  for (;;) {
    if (simgrid_in_flight_ > 0) {
      // SimGrid runs to the next own event, or to its own end when there is none.
      if (events_.empty()) {
        // Given back early, it goes on (the own event that stopped it may have been cancelled since).
        if (!run_simgrid_until(-1.0) && events_.empty())
          break;
        continue;
      }
      if (sg4::Engine::get_clock() < events_.front().date) {
        run_simgrid_until(events_.front().date);
        continue;
      }
    }
    if (events_.empty())
      break;
    run_next_event();
  }
  // Cancelled occupiers end at SimGrid's next round.
  engine_->run();
}

}  // namespace dtsim::replay
