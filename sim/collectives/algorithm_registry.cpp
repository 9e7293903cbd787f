#include "collectives/algorithm_registry.hpp"

#include <algorithm>

#include "collectives/algorithm_parts.hpp"

namespace dtsim::collectives {

// The catalog: each algorithm's entry is defined in collectives/algorithms/<name>.cpp and registered by one line of
// algorithms() below, in documentation order. NCCL's CollNet is not modelled.
AlgorithmDef ring_algorithm();
AlgorithmDef tree_algorithm();
AlgorithmDef nvls_algorithm();
AlgorithmDef nvls_tree_algorithm();
AlgorithmDef pat_algorithm();

const std::vector<AlgorithmDef>& algorithms()
{
  static const std::vector<AlgorithmDef> table = {
      ring_algorithm(),
      tree_algorithm(),
      nvls_algorithm(),
      nvls_tree_algorithm(),
      pat_algorithm(),
  };
  return table;
}

const std::vector<ProtocolDef>& protocols()
{
  static const std::vector<ProtocolDef> table = {
      {Protocol::LL, "ll", "8-byte stores carrying a flag: lowest latency, half the link bandwidth (NCCL LL)"},
      {Protocol::LL128, "ll128", "128-byte lines carrying a flag: 120 of every 128 bytes are data (NCCL LL128)"},
      {Protocol::Simple, "simple", "bulk copies with a fence per step: full bandwidth, highest latency (NCCL Simple)"},
  };
  return table;
}

std::vector<std::string> algorithm_choices()
{
  std::vector<std::string> v{"auto"};
  for (const auto& a : algorithms())
    v.push_back(a.name);
  return v;
}

std::vector<std::string> protocol_choices()
{
  std::vector<std::string> v{"auto"};
  for (const auto& p : protocols())
    v.push_back(p.name);
  return v;
}

const AlgorithmDef* find_algorithm(const std::string& name)
{
  for (const auto& a : algorithms())
    if (name == a.name)
      return &a;
  return nullptr;
}

const ProtocolDef& protocol_def(Protocol p) { return protocols()[size_t(p)]; }

namespace {

constexpr double kUs = 1e-6;

// NCCL llMaxBws (tuning.cc), a cap on LL's bus bandwidth, GB/s: one node by GPU generation (Ampere 87.7, Hopper
// 141, Blackwell 282; NVSwitch 2, 3, 4); across nodes by CPU (Intel row: 2 nodes 39.0, more 20.4). By release: the
// Hopper row was Ampere's 87.7 up to v2.20.5-1 and 141 from v2.21.5-1; the Blackwell row (2 x 141) came with
// v2.25.1-1, before which compute capability 10.0 read the Hopper row (minCompCap >= 90). The earlier rows apply
// where the stack names its release; one that does not (0) takes the latest (as the ring's LL fraction, ring.cpp).
constexpr int kHopperLlRaisedNccl = 22100;
constexpr int kBlackwellLlRowNccl = 22500;

double ll_max_bus_Bps(const GroupShape& g)
{
  if (g.nodes > 1)
    return (g.nodes <= 2 ? 39.0 : 20.4) * 1e9;
  if (g.nvswitch_generation >= 4 && !g.nccl_named_before(kBlackwellLlRowNccl))
    return 282.0 * 1e9;
  if (g.nvswitch_generation >= 3 && !g.nccl_named_before(kHopperLlRaisedNccl))
    return 141.0 * 1e9;
  return 87.7 * 1e9;
}

}  // namespace

bool applicable(const AlgorithmDef& a, Protocol p, Kind kind, const GroupShape& g)
{
  if (g.ranks < 2 || kind == Kind::AllToAll)
    return false;
  return a.applicable(p, kind, g);
}

Prediction predict(const AlgorithmDef& a, Protocol p, Kind kind, double bytes, const GroupShape& g)
{
  Prediction r;
  r.algorithm = &a;
  r.protocol = p;
  const int64_t n = g.ranks;
  const SizeEffect by_size = a.size_effect(p, kind, g, bytes);
  const double frac = a.bandwidth_fraction(p, kind, g) * by_size.fraction;
  const AlgorithmCost cost = a.cost(p, kind, g);
  r.nvlink_factor = cost.nvlink_factor / frac;
  r.nic_factor = cost.nic_factor / (a.nics_at_goodput ? 1.0 : frac);
  r.network_steps = cost.network_steps;
  double link_s = 0;
  if (r.nvlink_factor > 0 && g.nvlink_Bps > 0)
    link_s = std::max(link_s, r.nvlink_factor * bytes / g.nvlink_Bps);
  if (r.nic_factor > 0 && g.nic_Bps > 0)
    link_s = std::max(link_s, r.nic_factor * bytes / g.nic_Bps);
  // NCCL's caps on the bus bandwidth (LL's, the channels'), scaled as the rest of the bandwidth by the size's
  // correction (ncclTopoGetAlgoTime applies treeCorrectionFactor to the capped bandwidth): stretch every flow alike.
  double cap_Bps = a.bus_cap_Bps(p, g);
  if (p == Protocol::LL)
    cap_Bps = cap_Bps > 0 ? std::min(cap_Bps, ll_max_bus_Bps(g)) : ll_max_bus_Bps(g);
  if (cap_Bps > 0) {
    const double cap_s = a.ll_capped_s(ring_volume(kind, n) * bytes / (cap_Bps * by_size.fraction), n);
    if (cap_s > link_s && link_s > 0) {
      r.nvlink_factor *= cap_s / link_s;
      r.nic_factor *= cap_s / link_s;
      link_s = cap_s;
    }
  }
  r.latency_s = (cost.latency_us + by_size.latency_us) * kUs;
  r.tuner_time_s = r.latency_s + link_s;
  r.latency_s += a.run_latency_us(p, kind, g, bytes, cost.latency_us, link_s / kUs) * kUs;
  r.time_s = r.latency_s + link_s;
  return r;
}

Prediction choose(Kind kind, double bytes, const GroupShape& g, const CollectiveChoice& forced)
{
  auto allowed_algo = [&](const AlgorithmDef& a) {
    return forced.algorithm.empty() || forced.algorithm == "auto" || forced.algorithm == a.name;
  };
  auto allowed_proto = [&](const ProtocolDef& p) {
    return forced.protocol.empty() || forced.protocol == "auto" || forced.protocol == p.name;
  };
  // The ring: the one algorithm every collective has.
  static const AlgorithmDef& ring = *find_algorithm("ring");
  bool found = false;
  Prediction best;
  for (int pass = 0; pass < 3 && !found; ++pass) {
    // pass 0: what is forced; pass 1: the ring with the forced protocol; pass 2: the ring, Simple.
    for (const auto& a : algorithms()) {
      if (pass == 0 ? !allowed_algo(a) : &a != &ring)
        continue;
      for (const auto& p : protocols()) {
        if (pass == 2 ? p.id != Protocol::Simple : !allowed_proto(p))
          continue;
        if (!applicable(a, p.id, kind, g))
          continue;
        Prediction c = predict(a, p.id, kind, bytes, g);
        if (!found || c.tuner_time_s < best.tuner_time_s) {  // ties keep the earlier entry: deterministic
          best = c;
          found = true;
        }
      }
    }
  }
  return best;
}

}  // namespace dtsim::collectives
