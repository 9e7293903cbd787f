#pragma once
/// SimGrid plumbing shared by every replay: one engine per run with the network model dtsim uses, and actor-less
/// activities (kernels as Execs, flows as Comms, delays as timers) created one at a time, each calling a
/// continuation when it completes.
///
/// An exec alone on its host, or a flow alone on its links, is timed in closed form by a timer (its work
/// over the host's speed, its bytes over its narrowest link) instead of a SimGrid activity. When another exec or
/// flow starts on one of its resources it is handed to SimGrid with the work it has left, and shares from then on
/// as it would have had it been an activity from the start: the dates are SimGrid's, to rounding. Most kernels and
/// flows of a replay never share, and SimGrid 3.32 pays for every activity in flight at every completion (the
/// maestro's list of activities is scanned to remove the one ending): the every-device replay of GPT-3 175B on
/// 1,024 GPUs spent half its time there. The SimGrid activities that remain are started again once completed
/// instead of created, which keeps that list short (idle_execs_ below).
///
/// Those timers, latency delays and plain delays are this class's own events, in a queue of its own ordered by date
/// (then by when they were set): while SimGrid has no activity in flight its engine is not called at all, since its
/// loop costs about as much per event as the rest of a replay (it asks every model for its next event, updates
/// every model and scans their ended actions). While SimGrid has activities, it runs up to the next own event; an
/// own event set from inside SimGrid's loop, earlier than where that run stops, makes the loop hand back at the end
/// of its round, and the main loop runs it.
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include <simgrid/s4u.hpp>

namespace dtsim::replay {

class Activities {
 public:
  struct Occupation;  // occupy()'s handle, for release()

  /// Creates the SimGrid engine (one per process) and configures the network model: CM02 without
  /// cross-traffic and without the TCP window bound, i.e. latency + size / bandwidth with max-min sharing
  /// (../shared/notes/simgrid-3.32.md). Build the platform after this, then call run().
  Activities();
  ~Activities();
  Activities(const Activities&) = delete;
  Activities& operator=(const Activities&) = delete;

  /// Runs `seconds` of work on `host` (a GPU, a tile, MemoryX's CPUs); concurrent work on a host shares it.
  void exec(simgrid::s4u::Host* host, double seconds, std::function<void()> done);
  /// Moves `bytes` from `a` to `b` over the platform's route, its latency included, as one SimGrid comm (the
  /// wafer's platform, whose routes on a link may differ in latency).
  void comm(simgrid::s4u::Host* a, simgrid::s4u::Host* b, double bytes, std::function<void()> done);
  /// A flow on a platform whose links carry no latency (the GPU cluster's, platform::ClusterPlatform): waits
  /// `latency_s` (the route's latency, a timer), then moves `bytes` from `a` to `b`; concurrent flows share
  /// links (max-min); timed in closed form while alone on its links.
  void flow(simgrid::s4u::Host* a, simgrid::s4u::Host* b, double bytes, double latency_s,
            std::function<void()> done);
  /// Takes `share` (0..1) of `host`'s speed from one other exec running there, until release(): that exec gets
  /// the rest. Calls nothing when released. While the host runs at most one exec timed alone and nothing else,
  /// occupations are only that exec's rate, which its timer follows: 1 - share for one, and for several what
  /// SimGrid's sharing by priority gives it (occupation i has priority s_i / (1 - s_i) against the exec's 1);
  /// SimGrid sees them only when another exec comes.
  Occupation* occupy(simgrid::s4u::Host* host, double share);
  void release(Occupation* occupation);
  /// Waits `seconds` without using any resource: an own event, not an activity of a model, so the
  /// solver never sees it (a latency term or a closed-form collective per step costs no LMM variable). Counted in
  /// count() with the activities.
  void delay(double seconds, std::function<void()> done);

  /// One step of a sequence(): an exec of `amount` seconds on `a`, a delay of `amount` seconds, or a flow of
  /// `amount` bytes from `a` to `b` after `latency_s` (as exec(), delay() and flow()).
  struct Segment {
    enum class Kind { Exec, Delay, Flow } kind = Kind::Delay;
    simgrid::s4u::Host *a = nullptr, *b = nullptr;
    double amount = 0, latency_s = 0;
  };
  /// Runs `segments` one after the other, each as exec(), delay() or flow() would, then `done` with each one's end.
  /// While every host and link they use is free, the rest of them is one timer: it ends when they would all have
  /// run alone. When another activity starts on one of those resources, the segment running then goes on alone
  /// (or is handed to SimGrid, if that activity shares its own resources) and those after it start one at a time.
  void sequence(std::vector<Segment> segments, std::function<void(const std::vector<double>&)> done);

  /// Starts the event loop after `start` has created the first activities; returns when nothing is left.
  void run(const std::function<void()>& start);
  int64_t count() const { return count_; }
  /// The replay's clock: the date of the event being handled (its own or SimGrid's).
  static double now() { return now_; }

 private:
  // What an exec or a flow uses: a host or a link, by index into uses_. Counts its SimGrid activities (whose ends
  // are not known in advance) and lists the activities timed alone on it that have not ended.
  struct Solo;
  struct Sequence;
  struct Use {
    int64_t simgrid = 0;
    std::vector<Solo*> solo;
    std::vector<Occupation*> occupations;  // a host's occupations that SimGrid does not see (rates only)
  };
  using Resources = std::vector<size_t>;
  struct Handler {
    std::function<void()> fn;
    // Its SimGrid activity (one at most): an actor-less activity must stay referenced until it completes.
    simgrid::s4u::ExecPtr exec;
    simgrid::s4u::CommPtr comm;
    const Resources* counted = nullptr;  // where it is counted in Use::simgrid until it completes
  };
  // An exec (host set) or a flow (host unset) timed in closed form: alone on its resources until `ends`.
  struct Solo {
    Handler* h = nullptr;
    simgrid::s4u::Host* host = nullptr;
    simgrid::s4u::Host *a = nullptr, *b = nullptr;
    const Resources* resources = nullptr;
    double rate = 0;  // the host's speed (flops/s), less its occupations' shares, or the narrowest link (bytes/s)
    double ends = 0;
    size_t timer = 0;  // its end, an own event's slot (schedule_end)
    Sequence* sequence = nullptr;  // the rest of a sequence, timed as one (its resources: all those it uses)
  };
  struct Sequence {
    std::vector<Segment> segments;
    std::vector<double> ends;   // each segment's end, once known
    std::vector<double> sends;  // a flow's start after its latency, while timed as one
    std::function<void(const std::vector<double>&)> done;
    Resources resources;
  };
  // A flow route's links and the bandwidth a flow alone on it gets.
  struct Route {
    Resources links;
    double solo_Bps = 0;
  };
  // A host as a resource, with the speed an exec alone on it gets.
  struct HostResource {
    Resources use;
    double speed = 0;
  };

 public:
  struct Occupation {
    simgrid::s4u::Host* host = nullptr;
    const HostResource* resource = nullptr;
    double share = 0;
    simgrid::s4u::Exec* exec = nullptr;  // its SimGrid exec; none while it is only a rate
  };

 private:

  // ---- own events ----
  struct Event {
    double date = 0;
    uint64_t seq = 0;  // ties run in the order they were set, as SimGrid's timers did
    size_t slot = 0;   // its function in slots_
    bool before(const Event& o) const { return date != o.date ? date < o.date : seq < o.seq; }
  };
  /// Runs `fn` at `date` (not before now); returns its slot, for cancel().
  size_t at(double date, std::function<void()> fn);
  /// Takes a pending event out of the queue (a solo which SimGrid takes over).
  void cancel(size_t slot);
  /// Moves a pending event to `date` (a solo whose rate changes), in the order cancel() then at() would give it.
  void reschedule(size_t slot, double date);
  /// An event set for `date` from inside SimGrid's loop, before where that loop stops, makes it hand back.
  void hand_back_before(double date);
  // The queue is a binary heap that knows where each event sits, so that a cancelled event leaves it at once
  // instead of waiting there to be popped (a third of the events of a tp_overlap replay were cancelled ones).
  void place(size_t i, const Event& e);
  void sift_up(size_t i);
  void sift_down(size_t i);
  void resift(size_t i);
  Event pop_event(size_t i);
  /// Pops the next own event and runs it (nothing if it was cancelled).
  void run_next_event();
  /// Brings SimGrid's clock to now() before an activity of its starts or changes (its clock stays behind while
  /// it has nothing to do).
  void sync_simgrid();
  /// Runs SimGrid up to `date` (-1: to its end), its activities' ends and callbacks on the way; returns whether it
  /// stopped early, at the end of a round where an own event was set before `date`.
  bool run_simgrid_until(double date);

  Handler* handler(std::function<void()> fn);
  void dispatch(Handler* h);
  static void on_completion(simgrid::s4u::Activity const& a);

  const Route& route(simgrid::s4u::Host* a, simgrid::s4u::Host* b);
  const HostResource& host_resource(simgrid::s4u::Host* host);
  size_t resource_index(const void* resource);
  /// Adds `delta` to the SimGrid activities counted on each of `resources` (none: nothing).
  void count_on(const Resources* resources, int64_t delta);
  /// Hands every activity timed alone on `resources` that is still running over to SimGrid; returns whether
  /// none of them is in use any more (no SimGrid activity, nothing timed alone still running).
  bool claim(const Resources& resources);
  void start_solo(Handler* h, simgrid::s4u::Host* host, simgrid::s4u::Host* a, simgrid::s4u::Host* b,
                  const Resources& resources, double rate, double work);
  Solo* start_solo_until(Handler* h, simgrid::s4u::Host* host, simgrid::s4u::Host* a, simgrid::s4u::Host* b,
                         const Resources& resources, double rate, double ends);
  void schedule_end(Solo* s);
  void set_solo_rate(Solo* s, double rate);
  Solo* running_solo(const Use& use);
  void hand_to_simgrid(Solo* s);
  void end_solo(Solo* s);
  void forget_solo(Solo* s);
  void materialize(Occupation* o);
  /// The speed an exec alone on `use`'s host gets beside the occupations SimGrid does not see.
  static double exec_rate(const Use& use, double speed);
  /// Runs `q` from segment `from`: as one timer when all it uses is free, else that segment alone, then again.
  void continue_sequence(Sequence* q, size_t from);
  /// Another activity starts on a resource of `s` (the rest of a sequence): its running segment goes on alone.
  void split_sequence(Solo* s);
  void send(simgrid::s4u::Host* a, simgrid::s4u::Host* b, uint64_t bytes, Handler* h);
  void start_exec(simgrid::s4u::Host* host, double flops, Handler* h, const Resources* counted);
  void start_comm(simgrid::s4u::Host* a, simgrid::s4u::Host* b, uint64_t bytes, Handler* h,
                  const Resources* counted);
  /// The activities that completed before the one completing now go back to the idle ones (see idle_execs_).
  void recycle_ended();

  std::unique_ptr<simgrid::s4u::Engine> engine_;
  std::deque<Handler> handlers_;
  std::vector<Handler*> free_;
  std::vector<simgrid::s4u::ActivityPtr> graveyard_;
  // SimGrid 3.32 puts every exec and host-to-host comm that maestro creates on maestro's list of activities, and
  // at each completion removes it from there with std::list::remove, a scan of the whole list
  // (src/kernel/activity/ExecImpl.cpp, ExecImpl::ExecImpl and ::post; CommImpl.cpp, CommImpl::detach, which
  // s4u::Comm::sendto_init calls, and ::finish): a third of a DeepSeek-V3 replay's instructions. An activity goes
  // on that list only when created, so completed ones are started again instead of new ones, and the list holds
  // only the few created since. A completed activity is taken again only from the next completion on: SimGrid
  // ends it (ExecImpl::post, CommImpl::post) after its callback. A comm keeps its source and destination, so idle
  // comms are kept by route.
  std::vector<simgrid::s4u::ExecPtr> ended_execs_;  // completed in the callback in progress, not yet idle
  std::vector<simgrid::s4u::CommPtr> ended_comms_;
  std::vector<simgrid::s4u::ExecPtr> idle_execs_;
  // Occupying execs, kept referenced until SimGrid has ended them after their cancellation.
  struct Occupier {
    simgrid::s4u::ActivityPtr exec;
    int completions = 0;
    const Resources* counted = nullptr;  // counted on its host until released
  };
  std::map<const simgrid::s4u::Activity*, Occupier> occupiers_;
  Handler occupier_mark_;  // the data of every occupying exec
  int64_t count_ = 0;
  int64_t simgrid_in_flight_ = 0;  // SimGrid execs and comms started and not ended, occupiers until released

  static double now_;
  std::vector<Event> events_;  // a min-heap by (date, seq)
  static constexpr size_t kNotQueued = SIZE_MAX;
  struct Slot {
    std::function<void()> fn;
    size_t heap_index = kNotQueued;  // where its event sits in events_
  };
  std::vector<Slot> slots_;
  std::vector<size_t> free_slots_;
  uint64_t seq_ = 0;
  bool in_simgrid_ = false;    // inside SimGrid's loop (its callbacks)
  double simgrid_until_ = -1;  // where that loop stops (-1: when SimGrid has nothing left)
  bool syncing_ = false;       // inside sync_simgrid: own events wait for the main loop
  std::set<simgrid::s4u::Activity*> stop_requests_;  // SimGrid's vetoed set: not empty, its loop stops

  struct PairHash {
    size_t operator()(const std::pair<const void*, const void*>& p) const
    {
      return std::hash<const void*>()(p.first) * 31 + std::hash<const void*>()(p.second);
    }
  };
  std::unordered_map<std::pair<const void*, const void*>, Route, PairHash> routes_;
  std::unordered_map<std::pair<const void*, const void*>, std::vector<simgrid::s4u::CommPtr>, PairHash> idle_comms_;
  std::unordered_map<const void*, HostResource> hosts_;
  std::unordered_map<const void*, size_t> resource_index_;
  std::vector<Use> uses_;
  std::deque<Solo> solo_pool_;
  std::vector<Solo*> solo_free_;
  std::deque<Sequence> sequences_;
  std::vector<Sequence*> sequences_free_;
  std::deque<Occupation> occupations_;
  std::vector<Occupation*> occupations_free_;
};


}  // namespace dtsim::replay
