#pragma once
/// Collectives as NCCL runs them: one table of algorithms (ring, double binary tree, NVLink SHARP, NVLS tree) and
/// one of protocols (LL, LL128, Simple), with NCCL's cost model: a latency per (algorithm, protocol) and a
/// bandwidth that is a fraction of the links' goodput. The YAML checks, the CLI help and docs/yaml-reference.md
/// list their names from these tables.
///
/// Every constant is read from NCCL's tuner (NVIDIA/nccl, src/graph/tuning.cc at commit 5067397c, June 2026;
/// `baseLatencies`, `hwLatencies`, `llMaxBws`, `nvlsEfficiency` and the "model refinements" of ncclTopoTuneModel),
/// see docs/calibration.md, "Collectives". Times are in seconds, sizes in bytes, bandwidths in bytes/s.
#include <cstdint>
#include <string>
#include <vector>

namespace dtsim::collectives {

/// AllToAll: every rank sends bytes / n to every other rank at once (NCCL's grouped sends and receives), one
/// phase of n (n - 1) flows, each from the sender's own NIC across nodes (one NIC per flow: nccl-tests#267);
/// `bytes` is what one rank holds before the exchange, its own share included. It is not in the registry.
enum class Kind { AllReduce, ReduceScatter, AllGather, AllToAll };

/// NCCL's algorithms that dtsim models.
enum class Algorithm { Ring, Tree, Nvls, NvlsTree };
/// NCCL's protocols: LL (8-byte stores with a flag, low latency), LL128 (128-byte lines with a flag), Simple
/// (bulk copies with memory fences between steps).
enum class Protocol { LL, LL128, Simple };

/// The shape of a collective's group and the links it runs on.
struct GroupShape {
  int64_t ranks = 0;     ///< n
  int64_t nodes = 0;     ///< N (the group's members are spread evenly over them unless `uniform` is false)
  bool uniform = true;   ///< every node holds the same number of members
  int nvswitch_generation = 0;  ///< the nodes' NVSwitch (0: none known); NVLS needs 3 or more
  double nvlink_Bps = 0;  ///< goodput of one device's NVLink to the switch, per direction
  double nic_Bps = 0;     ///< goodput of one NIC, per direction
  double nvlink_latency_s = 0, nic_latency_s = 0;  ///< route latencies (paid by the flows themselves)
  int64_t per_node() const { return nodes > 0 ? ranks / nodes : ranks; }
};

/// What NCCL would do, or what a hardware or stack file forces (empty: NCCL's choice).
struct CollectiveChoice {
  std::string algorithm;  ///< "" or "auto": chosen by predicted time
  std::string protocol;   ///< "" or "auto"
};

struct AlgorithmDef {
  Algorithm id;
  const char* name;     ///< the YAML value
  const char* summary;  ///< one line, for help and docs
  const char* applies;  ///< where NCCL can run it
};

struct ProtocolDef {
  Protocol id;
  const char* name;
  const char* summary;
  double base_latency_us[4];  ///< per algorithm (Ring, Tree, Nvls, NvlsTree): NCCL baseLatencies
  double nvlink_step_us[4];   ///< per step within a node: NCCL hwLatencies[NVLINK]
  double net_step_us[4];      ///< per step across nodes: NCCL hwLatencies[NET]
};

/// The registries, in documentation order.
const std::vector<AlgorithmDef>& algorithms();
const std::vector<ProtocolDef>& protocols();
/// Valid YAML values: "auto" then every registry name.
std::vector<std::string> algorithm_choices();
std::vector<std::string> protocol_choices();
const AlgorithmDef& algorithm_def(Algorithm a);
const ProtocolDef& protocol_def(Protocol p);

/// Whether NCCL can run `a` with `p` for this collective on this group.
bool applicable(Algorithm a, Protocol p, Kind kind, const GroupShape& g);

/// The model's prediction for one candidate (NCCL's ncclTopoGetAlgoTime shape: latency + bytes / bandwidth).
struct Prediction {
  Algorithm algorithm = Algorithm::Ring;
  Protocol protocol = Protocol::Simple;
  double latency_s = 0;  ///< whole collective, route latency included
  /// Bytes a busiest link carries per byte of the tensor (the algorithm's traffic), over the protocol's and the
  /// algorithm's achieved fraction of goodput: link_factor * bytes / link goodput is the bandwidth term.
  double nvlink_factor = 0, nic_factor = 0;
  double time_s = 0;  ///< latency + the slower link's bandwidth term
};

/// The prediction for one algorithm and protocol (assumes applicable()).
Prediction predict(Algorithm a, Protocol p, Kind kind, double bytes, const GroupShape& g);

/// NCCL's choice: the applicable candidate with the lowest predicted time, among those `forced` allows. A forced
/// algorithm that cannot run this collective on this group falls back to the ring (as NCCL's per-function
/// NCCL_ALGO lists do: ring is the one algorithm every collective has).
Prediction choose(Kind kind, double bytes, const GroupShape& g, const CollectiveChoice& forced);

/// Achieved fraction of the links' goodput for a protocol under an algorithm (1 for Simple on a ring).
double bandwidth_fraction(Algorithm a, Protocol p, const GroupShape& g);

}  // namespace dtsim::collectives
