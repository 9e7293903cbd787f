#pragma once
// Internal to sim/replay: the activations and gradients pipeline stages send each other. By default as Megatron-LM
// does (parallel.pp_overlap false, p2p_communication): between two groups of units a stage posts the sends of the
// group it just ran and the receives of the group it runs next, all at once (batch_isend_irecv), and waits for all
// of them; a transfer starts when both its sender and its receiver have posted it (NCCL's send and receive meet), so
// a stage may wait for a neighbour to get there. With pp_overlap, sends are asynchronous and a unit waits only for
// its own input.
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "parallel/placement.hpp"
#include "parallel/schedule.hpp"
#include "replay/collective_runner.hpp"
#include "replay/replay.hpp"
#include "replay/step_program.hpp"

namespace dtsim::replay {

class PipelineTransfers {
 public:
  /// `exchanged(di, entered, covered)`: device di's batch of sends and receives, entered at `entered`, is over; for
  /// `covered` seconds of it one of its transfers was moving data, the rest it waited for a neighbour. `arrived(di)`:
  /// the input device di waited for (input_ready) has arrived.
  using Exchanged = std::function<void(size_t di, double entered, double covered)>;
  using Arrived = std::function<void(size_t di)>;
  /// `replicas`: the simulated devices of each stage (each stage's transfers are kept per replica); `asynchronous`:
  /// parallel.pp_overlap.
  PipelineTransfers(const parallel::PipelineSchedule& sched, const StepProgram& prog,
                    const parallel::Placement& placement, CollectiveRunner& comm, Trace& trace, int64_t replicas,
                    bool asynchronous, Exchanged exchanged, Arrived arrived);
  /// A simulated device (its number, coordinates and replica index), in the order of the caller's device indices.
  void add_device(int64_t device, const parallel::Coord& coord, int64_t replica);
  /// The (sender, receiver) stages that exchange activations.
  std::set<std::pair<int64_t, int64_t>> stage_pairs() const;

  /// Batched: whether device di, about to run the unit at position `pos` of its stage's order (past the end: its step
  /// is over), exchanges first (a new group, or the step's last sends).
  bool exchange_due(size_t di, size_t pos) const;
  /// Batched: posts the sends of the units device di ran since its last exchange and the receives of the group at
  /// `pos`; `exchanged` once all are done.
  void start_exchange(size_t di, size_t pos);
  /// Unit `u` of device di finished: its output goes to the next stage, now (asynchronous) or at the next exchange.
  void unit_done(size_t di, parallel::UnitId u);
  /// Whether unit `u` receives an input from another stage.
  bool receives(parallel::UnitId u) const { return recv_from_[u] >= 0; }
  /// Asynchronous: whether the input of unit `u` of device di has arrived; if not, `arrived` calls back once it has.
  bool input_ready(size_t di, parallel::UnitId u);
  /// Asynchronous: when the send of that input started.
  double input_sent_at(size_t di, parallel::UnitId u) const { return arrival(di, u).send_start; }

 private:
  struct Arrival {  // an asynchronous send, keyed by the unit that consumes it
    bool arrived = false;
    bool waiting = false;
    double send_start = 0;
  };
  struct Transfer {  // a send of a batched exchange, keyed by the unit that consumes it
    bool sender_posted = false, receiver_posted = false;
    size_t sender = 0, receiver = 0;  // device indices
    double start = 0, end = 0;
  };
  struct Endpoint {  // a simulated device's side
    int64_t device = 0;
    parallel::Coord coord;
    int64_t replica = 0;
    std::vector<parallel::UnitId> unsent;  // finished units whose output goes at the next exchange
    int64_t exchanged_group = -1;          // the group whose receives the last exchange made
    bool final_exchange_done = false;      // the sends after the last group
    int64_t group = 0, pending = 0;        // the exchange under way: its group (-1: the last sends), transfers left
    double entered = 0;
    std::vector<size_t> transfers;
  };
  /// The unit's index among those of its replica (arrivals and transfers are kept per replica and consumer).
  size_t index(int64_t replica, parallel::UnitId consumer) const;
  const Arrival& arrival(size_t di, parallel::UnitId u) const { return arrivals_[index(ends_[di].replica, u)]; }
  void post_transfer(size_t id, size_t di, bool as_sender);
  void finish_exchange(size_t di);
  void send(size_t di, parallel::UnitId to);

  std::vector<std::pair<double, double>> busy_;  // finish_exchange's intervals, kept to spare an allocation per unit
  const parallel::PipelineSchedule& sched_;
  const StepProgram& prog_;
  const parallel::Placement& placement_;
  CollectiveRunner& comm_;
  Trace& trace_;
  bool asynchronous_;
  Exchanged exchanged_;
  Arrived arrived_;
  std::vector<int64_t> recv_from_, send_to_;  // per unit: the unit of another stage it receives from, sends to
  std::vector<Endpoint> ends_;                // by device index
  std::map<std::pair<int64_t, int64_t>, size_t> index_of_;  // (stage, replica) -> device index
  std::vector<Arrival> arrivals_;
  std::vector<Transfer> transfers_;
};

}  // namespace dtsim::replay
