#include "collectives/algorithm_registry.hpp"

#include <algorithm>
#include <cmath>

namespace dtsim::collectives {

// Constants of NCCL's tuner, NVIDIA/nccl src/graph/tuning.cc at 5067397c (ncclTunerConstantsDefaults), in
// microseconds. Columns: Ring, Tree, NVLS, NVLS tree (NCCL's CollNet and PAT are not modelled).
//   baseLatencies   Tree {6.8, 14.0, 8.4}, Ring {6.6, 14.0, 8.4}, NVLS {0, 0, 0}, NVLSTree {0, 0, 0}  (LL, LL128, Simple)
//   hwLatencies NVLINK  Tree {0.6, 1.25, 4.0}, Ring {0.6, 1.9, 3.4}, NVLS {0, 0, 25}, NVLSTree {0, 0, 25}
//   hwLatencies NET     Tree {5.0, 8.5, 14}, Ring {2.7, 4.0, 14.0}, NVLS {0, 0, 18}, NVLSTree {0, 0, 20.9}
// NVLS and NVLS tree run only the Simple protocol (ncclTopoTuneModel skips LL and LL128 for them).
const std::vector<ProtocolDef>& protocols()
{
  static const std::vector<ProtocolDef> table = {
      {Protocol::LL, "ll",
       "8-byte stores carrying a flag: lowest latency, half the link bandwidth (NCCL LL)",
       {6.6, 6.8, 0, 0}, {0.6, 0.6, 0, 0}, {2.7, 5.0, 0, 0}},
      {Protocol::LL128, "ll128",
       "128-byte lines carrying a flag: 120 of every 128 bytes are data (NCCL LL128)",
       {14.0, 14.0, 0, 0}, {1.9, 1.25, 0, 0}, {4.0, 8.5, 0, 0}},
      {Protocol::Simple, "simple",
       "bulk copies with a fence per step: full bandwidth, highest latency (NCCL Simple)",
       {8.4, 8.4, 0, 0}, {3.4, 4.0, 25, 25}, {14.0, 14.0, 18, 20.9}},
  };
  return table;
}

const std::vector<AlgorithmDef>& algorithms()
{
  static const std::vector<AlgorithmDef> table = {
      {Algorithm::Ring, "ring",
       "ring through every member; across nodes each node's NICs carry one channel each (NCCL ring)",
       "every all-reduce, reduce-scatter and all-gather"},
      {Algorithm::Tree, "tree",
       "chain within each node, two complementary binary trees across nodes (NCCL double binary tree)",
       "all-reduce"},
      {Algorithm::Nvls, "nvls",
       "NVLink SHARP: the NVSwitch reduces and multicasts, each GPU sends and receives S(1 + 1/n) (NCCL NVLS)",
       "all-reduce within one node of NVSwitch generation 3 or later"},
      {Algorithm::NvlsTree, "nvls_tree",
       "NVLink SHARP within each node, double binary tree across nodes (NCCL NVLS tree)",
       "all-reduce across nodes of NVSwitch generation 3 or later, two or more members per node"},
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

const AlgorithmDef& algorithm_def(Algorithm a) { return algorithms()[size_t(a)]; }
const ProtocolDef& protocol_def(Protocol p) { return protocols()[size_t(p)]; }

namespace {

constexpr double kUs = 1e-6;

bool nvls_node(const GroupShape& g) { return g.nvswitch_generation >= 3; }

// NCCL nvlsEfficiency (tuning.cc): Hopper 0.85, Blackwell 0.74; NVSwitch 3 ships with Hopper, 4 with Blackwell.
double nvls_efficiency(const GroupShape& g) { return g.nvswitch_generation >= 4 ? 0.74 : 0.85; }

// NCCL llMaxBws (tuning.cc), a cap on LL's bus bandwidth, GB/s: one node by GPU generation (Ampere 87.7, Hopper
// 141, Blackwell 282; NVSwitch 2, 3, 4); across nodes by CPU (Intel row: 2 nodes 39.0, more 20.4).
double ll_max_bus_Bps(const GroupShape& g)
{
  if (g.nodes > 1)
    return (g.nodes <= 2 ? 39.0 : 20.4) * 1e9;
  return (g.nvswitch_generation >= 4 ? 282.0 : g.nvswitch_generation >= 3 ? 141.0 : 87.7) * 1e9;
}

int log2i(int64_t v)
{
  int l = 0;
  while (v > 1) {
    v >>= 1;
    ++l;
  }
  return l;
}

// Links of one node in the two trees (heap numbering; the second tree mirrors the first), the most of any node:
// each tree link carries half the tensor each way.
int64_t max_tree_degree(int64_t nodes)
{
  auto degree = [nodes](int64_t p) {
    return int64_t(p > 0) + int64_t(2 * p + 1 < nodes) + int64_t(2 * p + 2 < nodes);
  };
  int64_t most = 0;
  for (int64_t i = 0; i < nodes; ++i)
    most = std::max(most, degree(i) + degree(nodes - 1 - i));
  return most;
}

double ring_volume(Kind kind, int64_t n)  // bytes each rank sends, per byte of the tensor
{
  const double f = double(n - 1) / double(n);
  return kind == Kind::AllReduce ? 2 * f : f;
}

}  // namespace

double bandwidth_fraction(Algorithm a, Protocol p, const GroupShape& g)
{
  // tuning.cc, "Various model refinements": ring LL busBw * .5, ring LL128 * 0.92 (120/128); tree all-reduce
  // busBw * .92, then LL / 3.8, LL128 * 7/9 (one node) or 120/128 (several); NVLS nvlsEfficiency.
  switch (a) {
    case Algorithm::Ring: return p == Protocol::LL ? 0.5 : p == Protocol::LL128 ? 0.92 : 1.0;
    case Algorithm::Tree:
      return 0.92 * (p == Protocol::LL ? 1.0 / 3.8
                     : p == Protocol::LL128 ? (g.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0)
                                            : 1.0);
    default: return nvls_efficiency(g);
  }
}

bool applicable(Algorithm a, Protocol p, Kind kind, const GroupShape& g)
{
  if (g.ranks < 2 || kind == Kind::AllToAll)
    return false;
  const bool simple = p == Protocol::Simple;
  switch (a) {
    case Algorithm::Ring: return true;
    case Algorithm::Tree: return kind == Kind::AllReduce && g.uniform;
    case Algorithm::Nvls: return simple && kind == Kind::AllReduce && g.nodes == 1 && nvls_node(g);
    case Algorithm::NvlsTree:
      return simple && kind == Kind::AllReduce && g.nodes > 1 && g.uniform && g.per_node() >= 2 && nvls_node(g);
  }
  return false;
}

Prediction predict(Algorithm a, Protocol p, Kind kind, double bytes, const GroupShape& g)
{
  Prediction r;
  r.algorithm = a;
  r.protocol = p;
  const auto& pd = protocol_def(p);
  const size_t ai = size_t(a);
  const int64_t n = g.ranks, N = std::max<int64_t>(1, g.nodes), k = g.per_node();
  const double frac = bandwidth_fraction(a, p, g);
  double lat_us = pd.base_latency_us[ai];
  switch (a) {
    case Algorithm::Ring: {
      // Latency: (nsteps - nInterSteps) * intra + nInterSteps * inter; across nodes the intra step is at least
      // the network post overhead (1 us on Intel CPUs, x 3 for Simple: getNetOverhead), with one member per node
      // the inter step is the tree's, and Simple all-reduce across nodes is x 1.4 ("plateau effect of ring",
      // ncclTopoGetAlgoTime, compute capability 8.0 and later).
      const int64_t steps = kind == Kind::AllReduce ? 2 * (n - 1) : n - 1;
      const int64_t inter_steps = N == 1 ? 0 : kind == Kind::AllReduce ? 2 * (N - 1) : N - 1;
      double intra = pd.nvlink_step_us[ai];
      if (N > 1)
        intra = std::max(intra, p == Protocol::Simple ? 3.0 : 1.0);
      const double inter = k > 1 ? pd.net_step_us[ai] : pd.net_step_us[size_t(Algorithm::Tree)];
      lat_us += double(steps - inter_steps) * intra + double(inter_steps) * inter;
      if (p == Protocol::Simple && N > 1 && kind == Kind::AllReduce)
        lat_us *= 1.4;
      const double v = ring_volume(kind, n);
      if (N == 1) {
        r.nvlink_factor = v;
      } else if (!g.uniform) {  // one ring in group order: some edges on NVLink, some across the fabric
        r.nvlink_factor = v;
        r.nic_factor = v;
      } else {  // every node's k NICs carry one channel each, the other k - 1 channels stay on NVLink
        r.nvlink_factor = v * double(k - 1) / double(k);
        r.nic_factor = v / double(k);
      }
      break;
    }
    case Algorithm::Tree:
      lat_us += 2 * (double(k - 1) * pd.nvlink_step_us[ai] + double(log2i(N)) * pd.net_step_us[ai]);
      r.nvlink_factor = k > 1 ? 2.0 : 0.0;  // the chain's reduce and broadcast each pass S over a device's link
      r.nic_factor = N > 1 ? 0.5 * double(max_tree_degree(N)) / double(k) : 0.0;
      break;
    case Algorithm::Nvls:
      lat_us = pd.nvlink_step_us[ai];
      r.nvlink_factor = 1.0 + 1.0 / double(n);
      break;
    case Algorithm::NvlsTree:
      lat_us += pd.nvlink_step_us[ai] + 2 * double(log2i(N)) * pd.net_step_us[ai];
      r.nvlink_factor = 1.0 + 1.0 / double(k);
      r.nic_factor = 0.5 * double(max_tree_degree(N)) / double(k);
      break;
  }
  // NVLS tree: the protocol's fraction applies to the in-switch part only; the NICs run at their goodput.
  const double nic_frac = a == Algorithm::NvlsTree ? 1.0 : frac;
  r.nvlink_factor /= frac;
  r.nic_factor /= nic_frac;
  double link_s = 0;
  if (r.nvlink_factor > 0 && g.nvlink_Bps > 0)
    link_s = std::max(link_s, r.nvlink_factor * bytes / g.nvlink_Bps);
  if (r.nic_factor > 0 && g.nic_Bps > 0)
    link_s = std::max(link_s, r.nic_factor * bytes / g.nic_Bps);
  if (p == Protocol::LL) {  // LL's bus bandwidth cap: stretch every flow alike
    const double bus_s = ring_volume(Kind::AllReduce, n) * bytes / ll_max_bus_Bps(g);
    const double cap_s = a == Algorithm::Tree ? bus_s * double(n) / double(n - 1) : bus_s;  // tree: algbw = busBw/2
    if (cap_s > link_s && link_s > 0) {
      r.nvlink_factor *= cap_s / link_s;
      r.nic_factor *= cap_s / link_s;
      link_s = cap_s;
    }
  }
  r.latency_s = lat_us * kUs;
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
  bool found = false;
  Prediction best;
  for (int pass = 0; pass < 3 && !found; ++pass) {
    // pass 0: what is forced; pass 1: the ring with the forced protocol; pass 2: the ring, Simple.
    for (const auto& a : algorithms()) {
      if (pass == 0 ? !allowed_algo(a) : a.id != Algorithm::Ring)
        continue;
      for (const auto& p : protocols()) {
        if (pass == 2 ? p.id != Protocol::Simple : !allowed_proto(p))
          continue;
        if (!applicable(a.id, p.id, kind, g))
          continue;
        Prediction c = predict(a.id, p.id, kind, bytes, g);
        if (!found || c.time_s < best.time_s) {  // ties keep the earlier entry: deterministic
          best = c;
          found = true;
        }
      }
    }
  }
  return best;
}

}  // namespace dtsim::collectives
