#pragma once
/// Collectives as NCCL runs them: a catalog of algorithms (ring, double binary tree, NVLink SHARP, NVLS tree, PAT),
/// one file per algorithm in collectives/algorithms/ registered by one line of algorithm_registry.cpp, and a table of
/// protocols (LL, LL128, Simple), with NCCL's cost model: a latency per (algorithm, protocol) and a bandwidth that
/// is a fraction of the links' goodput. The YAML checks, the CLI help and docs/yaml-reference.md list their names
/// from these tables; adding an algorithm is adding a file and its line (docs/architecture.md, "Catalogs").
///
/// Every constant is read from NCCL (NVIDIA/nccl at commit 5067397c, June 2026: src/graph/tuning.cc's
/// `baseLatencies`, `hwLatencies`, `llMaxBws`, `nvlsEfficiency`, `treeCorrectionFactor` and the "model refinements"
/// of ncclTopoTuneModel; NVLS's channels and chunks), but one fitted on a published curve (NVLS's wait per chunk,
/// algorithms/nvls.cpp), and where NCCL's releases differ in what dtsim models the entry reads the stack's release
/// (GroupShape::nccl_version: PAT, the NVLS tree); see docs/calibration.md, "Collectives". Times are in seconds, sizes
/// in bytes, bandwidths in bytes/s.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/lone_members.hpp"

namespace dtsim::collectives {

/// AllToAll: every rank sends bytes / n to every other rank at once (NCCL's grouped sends and receives), one
/// phase of n (n - 1) flows, each from the sender's own NIC across nodes (one NIC per flow: nccl-tests#267);
/// `bytes` is what one rank holds before the exchange, its own share included. It is not in the registry.
enum class Kind { AllReduce, ReduceScatter, AllGather, AllToAll };

/// NCCL's protocols: LL (8-byte stores with a flag, low latency), LL128 (128-byte lines with a flag), Simple
/// (bulk copies with memory fences between steps).
enum class Protocol { LL, LL128, Simple };
/// One value per protocol, indexed by Protocol: a column of NCCL's tuner tables.
using PerProtocol = std::array<double, 3>;

/// The shape of a collective's group and the links it runs on.
struct GroupShape {
  int64_t ranks = 0;     ///< n
  /// N: NCCL's nodes, the scale-up (NVLink) domains the group spans (the group's members are spread evenly over
  /// them unless `uniform` is false); a host on DGX-style hardware, a rack on an NVL72
  int64_t nodes = 0;
  bool uniform = true;   ///< every node holds the same number of members
  int nvswitch_generation = 0;  ///< the nodes' NVSwitch (0: none known); NVLS needs 3 or more
  bool nvls_enabled = true;     ///< false where the hardware turns NVLS off (scale_up.nvls false)
  /// goodput of one device's NVLink to the switch, per direction; on a switchless mesh, of its links to the other
  /// members of its domain together (collectives::group_shape, parallel/group_shape.hpp)
  double nvlink_Bps = 0;
  double nic_Bps = 0;     ///< goodput of one NIC, per direction
  double nvlink_latency_s = 0, nic_latency_s = 0;  ///< route latencies (paid by the flows themselves)
  /// The NCCL release the stack's runs used, as NCCL_VERSION_CODE (2.23.4: 22304); 0 where not published: the
  /// algorithms of the releases before 2.23 (stack key `nccl`)
  int nccl_version = 0;
  /// The stack names a release older than `release`: only then do a protocol's earlier bandwidth figures apply
  /// (an unpublished release keeps the latest ones, with which its stacks were fitted).
  bool nccl_named_before(int release) const { return nccl_version > 0 && nccl_version < release; }
  int64_t per_node() const { return nodes > 0 ? ranks / nodes : ranks; }
};

/// What NCCL would do, or what a hardware or stack file forces (empty: NCCL's choice).
struct CollectiveChoice {
  std::string algorithm;  ///< "" or "auto": chosen by predicted time
  std::string protocol;   ///< "" or "auto"
};

/// One flow of a collective: `bytes` from device `src` to device `dst`.
struct Flow {
  int64_t src = 0, dst = 0;  ///< device indices
  double bytes = 0;
};

/// A group's members on each of its nodes, nodes in ascending order, members in group order.
using MembersByNode = std::vector<std::vector<int64_t>>;

/// What an algorithm costs NCCL's model, before the protocol's fraction of goodput.
struct AlgorithmCost {
  double latency_us = 0;  ///< NCCL's latency for the whole collective, route latency included
  /// Bytes the busiest NVLink and the busiest NIC carry per byte of the tensor, each way.
  double nvlink_factor = 0, nic_factor = 0;
  /// NCCL's network steps on the critical path (tuning.cc, ncclTopoTuneModel: a ring's nInterSteps, a tree's
  /// 2 log2(nodes)); each crosses the fabric's switches (parallel/fabric_routes.hpp). 0 within a node.
  int64_t network_steps = 0;
};

/// What the message size changes in an algorithm's cost.
struct SizeEffect {
  double fraction = 1;    ///< a factor of the achieved fraction of the links' goodput
  double latency_us = 0;  ///< added to the algorithm's latency
};

/// An algorithm's entry: its names and what it does, as NCCL's tuner models it and as flows on the links. Only
/// `nics_at_goodput`, `bus_cap_Bps`, `ll_capped_s`, `size_effect` and `run_latency_us` have defaults; an entry sets
/// every other field.
struct AlgorithmDef {
  const char* name = "";     ///< the YAML value
  const char* summary = "";  ///< one line, for help and docs
  const char* applies = "";  ///< where NCCL can run it
  /// Whether NCCL can run it with `p` for this collective on this group (asked only of groups of two or more
  /// members, for every kind but AllToAll).
  bool (*applicable)(Protocol p, Kind kind, const GroupShape& g) = nullptr;
  /// Achieved fraction of the links' goodput under `p` for this collective (1 for Simple on a ring).
  double (*bandwidth_fraction)(Protocol p, Kind kind, const GroupShape& g) = nullptr;
  /// Whether that fraction leaves the NICs at their goodput (NVLS tree: it applies to the in-switch part only).
  bool nics_at_goodput = false;
  /// Latency and bytes per link of the collective on this group (assumes applicable()).
  AlgorithmCost (*cost)(Protocol p, Kind kind, const GroupShape& g) = nullptr;
  /// NCCL's cap on the bus bandwidth under `p` on this group, bytes/s (0: none): the per-channel caps of
  /// ncclTopoTuneModel's "model refinements" over the graph's channels (collectives/channel_caps.hpp), declared
  /// where the algorithm is defined. LL's own cap (llMaxBws) applies to every algorithm on top (predict()).
  double (*bus_cap_Bps)(Protocol p, const GroupShape& g) = [](Protocol, const GroupShape&) { return 0.0; };
  /// The time NCCL's bus-bandwidth caps allow (llMaxBws, the per-channel caps), from `bus_s`, the time at the cap
  /// of this collective's ring bus bytes on `ranks` members.
  double (*ll_capped_s)(double bus_s, int64_t ranks) = [](double bus_s, int64_t) { return bus_s; };
  /// What the size of the tensor, `bytes`, changes in the algorithm's cost (none by default): NCCL's correction of
  /// the tree's bandwidth, the chunks NVLS cuts the tensor into.
  SizeEffect (*size_effect)(Protocol p, Kind kind, const GroupShape& g, double bytes) =
      [](Protocol, Kind, const GroupShape&, double) { return SizeEffect{}; };
  /// What the run costs beyond NCCL's latency, microseconds, for a tensor of `bytes` (none by default): the ring's
  /// Simple steps, paid again on every loop of its chunks, and its LL128 chunks as releases before 2.20 cut them
  /// (algorithms/ring.cpp). `tuner_latency_us` is the latency `cost` gave for the same protocol, kind and group,
  /// `tuner_bandwidth_us` the bandwidth term predict() gave (bytes over the bandwidth, caps included). NCCL's tuner
  /// does not see this, so it does not take part in the choice (Prediction::tuner_time_s); it is part of the time
  /// the collective takes.
  double (*run_latency_us)(Protocol p, Kind kind, const GroupShape& g, double bytes, double tuner_latency_us,
                           double tuner_bandwidth_us) =
      [](Protocol, Kind, const GroupShape&, double, double, double) { return 0.0; };
  /// Appends to `flows` the flows that load every link as the algorithm does: `nvlink_bytes` over the busiest
  /// NVLink and `nic_bytes` over the busiest NIC, each way. `group` is in ring order.
  void (*lay_flows)(const std::vector<int64_t>& group, const MembersByNode& by_node, const GroupShape& g,
                    double nvlink_bytes, double nic_bytes, std::vector<Flow>& flows) = nullptr;
  /// Optional (null: not known), for a group whose every member is alone in its node, listed in ascending order
  /// (`members`: node k holds members[k], so every flow crosses nodes): the flows lay_flows lays that touch node
  /// `node`'s member, in lay_flows' order. Where an entry sets it, every flow lay_flows lays on such a group has the
  /// same bytes, and a member sends as many flows as it receives, `member_flows(node, g)`; `first_busiest_node(g)` is
  /// the first node whose member sends the most. A folded replay takes the busiest member's flows from these without
  /// laying every member's (a data-parallel group of a thousand; parallel/collective.hpp, plan_busiest_member). Checked
  /// against lay_flows node by node (tests/unit/member_flows_test.cpp).
  void (*lay_member_flows)(const LoneMembers& members, const GroupShape& g, double nvlink_bytes, double nic_bytes,
                           int64_t node, std::vector<Flow>& flows) = nullptr;
  int64_t (*member_flows)(int64_t node, const GroupShape& g) = nullptr;
  int64_t (*first_busiest_node)(const GroupShape& g) = nullptr;
};

struct ProtocolDef {
  Protocol id;
  const char* name;
  const char* summary;
};

/// The registries, in documentation order.
const std::vector<AlgorithmDef>& algorithms();
const std::vector<ProtocolDef>& protocols();
/// Valid YAML values: "auto" then every registry name.
std::vector<std::string> algorithm_choices();
std::vector<std::string> protocol_choices();
/// The algorithm named `name`, or nullptr.
const AlgorithmDef* find_algorithm(const std::string& name);
const ProtocolDef& protocol_def(Protocol p);

/// Whether NCCL can run `a` with `p` for this collective on this group.
bool applicable(const AlgorithmDef& a, Protocol p, Kind kind, const GroupShape& g);

/// The model's prediction for one candidate (NCCL's ncclTopoGetAlgoTime shape: latency + bytes / bandwidth).
struct Prediction {
  const AlgorithmDef* algorithm = nullptr;  ///< an entry of algorithms()
  Protocol protocol = Protocol::Simple;
  double latency_s = 0;  ///< whole collective as it runs, route latency included (the run's latency too)
  /// Bytes a busiest link carries per byte of the tensor (the algorithm's traffic), over the protocol's and the
  /// algorithm's achieved fraction of goodput: link_factor * bytes / link goodput is the bandwidth term.
  double nvlink_factor = 0, nic_factor = 0;
  int64_t network_steps = 0;  ///< AlgorithmCost::network_steps
  double time_s = 0;  ///< latency + the slower link's bandwidth term
  /// NCCL's own estimate, ncclTopoGetAlgoTime's shape: time_s less what only the run costs (run_latency_us). The
  /// choice among candidates is made on it, as NCCL's tuner makes it.
  double tuner_time_s = 0;
};

/// The prediction for one algorithm and protocol (assumes applicable()).
Prediction predict(const AlgorithmDef& a, Protocol p, Kind kind, double bytes, const GroupShape& g);

/// NCCL's choice: the applicable candidate with the lowest tuner time, among those `forced` allows. A forced
/// algorithm that cannot run this collective on this group falls back to the ring (as NCCL's per-function
/// NCCL_ALGO lists do: ring is the one algorithm every collective has).
Prediction choose(Kind kind, double bytes, const GroupShape& g, const CollectiveChoice& forced);

}  // namespace dtsim::collectives
