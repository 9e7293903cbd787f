// Collectives as NCCL runs them (collectives/algorithm_registry.hpp): the flows of each algorithm, each algorithm's
// time against its closed form computed here by hand from NCCL's constants, the same in SimGrid on an uncontended
// fabric, and the tensor-parallel traffic of Megatron-LM (Narayanan et al. 2021, Sec. 3.2: 2 all-reduces forward
// and 2 backward of b*s*h elements per layer and microbatch).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "app/simulate.hpp"
#include "parallel/collective.hpp"
#include "kernels/compute_model.hpp"
#include "hardware/hardware_keys.hpp"
#include "model/transformer.hpp"
#include "parallel/placement.hpp"
#include "replay/step_program.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"
#include "test_units.hpp"

using dtsim::parallel::derive_plan;

namespace {

using dtsim::collectives::AlgorithmDef;
using dtsim::collectives::Fabric;
using dtsim::collectives::GroupShape;
using dtsim::collectives::Kind;
using dtsim::collectives::Protocol;
using dtsim::collectives::plan_collective;
using dtsim::parallel::Placement;
using dtsim::test::rel_diff;
using dtsim::test::source_path;

constexpr double S = 64.0 * 1048576;  // tensor size in bytes
using dtsim::test::kUs;

// The registry's entry named `name` (throws, failing the test, when there is none).
const AlgorithmDef& algorithm(const std::string& name)
{
  const AlgorithmDef* a = dtsim::collectives::find_algorithm(name);
  if (!a)
    throw std::invalid_argument("no collective algorithm '" + name + "' in the registry");
  return *a;
}

// DGX A100-like links (hardware/dgx-a100-80gb.yaml): NVLink goodput 240 GB/s, HDR 24 GB/s, one NIC per GPU.
Fabric a100(const std::string& algorithm = "ring", const std::string& protocol = "simple")
{
  Fabric f;
  f.nvlink_Bps = 240e9;
  f.nvlink_latency_s = 2e-6;
  f.nic_Bps = 24e9;
  f.nic_latency_s = 5e-6;
  f.nics_per_domain = 8;
  f.devices_per_domain = 8;
  f.nvswitch_generation = 2;
  f.choice = {algorithm, protocol};
  return f;
}

Fabric h100(const std::string& algorithm, const std::string& protocol = "simple")
{
  Fabric f = a100(algorithm, protocol);
  f.nvlink_Bps = 370.8e9;
  f.nic_Bps = 48.5e9;
  f.nvswitch_generation = 3;
  return f;
}

TEST(PlanCollective, RingAllReduceInOneNode)
{
  Placement pl(1, 8, 1, 8);  // dp 1, tp 8, pp 1, 8 devices per node
  auto group = pl.tp_group(0, 0);
  ASSERT_EQ(group.size(), 8u);
  auto phases = plan_collective(Kind::AllReduce, S, group, pl, a100());
  ASSERT_EQ(phases.size(), 1u);
  const auto& ph = phases[0];
  EXPECT_FALSE(ph.inter_node);
  // NCCL ring, Simple: 8.4 us + 2(n-1) x 3.4 us, of which the flows pay the 2 us route
  EXPECT_NEAR(ph.latency_s, (8.4 + 14 * 3.4 - 2) * kUs, 1e-12);
  ASSERT_EQ(ph.flows.size(), 8u);
  std::set<int64_t> srcs;
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(ph.flows[i].src, group[i]);
    EXPECT_EQ(ph.flows[i].dst, group[(i + 1) % 8]);  // ring edges
    EXPECT_DOUBLE_EQ(ph.flows[i].bytes, 2.0 * 7.0 / 8.0 * S);
    srcs.insert(ph.flows[i].src);
  }
  EXPECT_EQ(srcs.size(), 8u);
}

TEST(PlanCollective, RingReduceScatterAndAllGatherAreHalf)
{
  Placement pl(1, 8, 1, 8);
  for (Kind k : {Kind::ReduceScatter, Kind::AllGather}) {
    auto phases = plan_collective(k, S, pl.tp_group(0, 0), pl, a100());
    ASSERT_EQ(phases.size(), 1u);
    EXPECT_NEAR(phases[0].latency_s, (8.4 + 7 * 3.4 - 2) * kUs, 1e-12);
    for (const auto& f : phases[0].flows)
      EXPECT_DOUBLE_EQ(f.bytes, 7.0 / 8.0 * S);
  }
}

TEST(PlanCollective, NothingForOneRankOrNoBytes)
{
  Placement pl(1, 8, 1, 8);
  EXPECT_TRUE(plan_collective(Kind::AllReduce, S, {3}, pl, a100()).empty());
  EXPECT_TRUE(plan_collective(Kind::AllReduce, 0, pl.tp_group(0, 0), pl, a100()).empty());
}

// A data-parallel group of 8 spread over 4 nodes, 2 members per node (dp 8, tp 4, 8 devices per node: the group
// of TP rank 0 is devices 0, 4, 8, ..., 28). NCCL's ring across nodes: 2 channels, each node's two NICs carry one
// channel each to the same local rank of the next node, the other channel stays on NVLink.
TEST(PlanCollective, RingAcrossFourNodes)
{
  Placement pl(8, 4, 1, 8);
  auto group = pl.dp_group(0, 0);
  ASSERT_EQ(group, (std::vector<int64_t>{0, 4, 8, 12, 16, 20, 24, 28}));
  auto phases = plan_collective(Kind::AllReduce, S, group, pl, a100());
  ASSERT_EQ(phases.size(), 1u);
  const auto& ph = phases[0];
  EXPECT_TRUE(ph.inter_node);
  // NCCL's tuner: (8.4 + (14 - 6) x 3.4 + 6 x 14.0) x 1.4 (the ring's plateau) = 167.7 us; as it runs, one loop
  // (4 kernel channels x 8 members x 2 MiB = 64 MiB = S) of 14 steps, each at the network's 14 us: 8.4 + 14 x 14.0,
  // the larger; less the 5 us route
  EXPECT_NEAR(ph.latency_s, (8.4 + 14 * 14.0 - 5) * kUs, 1e-12);
  ASSERT_EQ(ph.flows.size(), 16u);
  int inter = 0;
  for (const auto& f : ph.flows) {
    EXPECT_DOUBLE_EQ(f.bytes, 2.0 * 7.0 / 8.0 * S / 2);  // each link: one of the two channels
    if (pl.domain_of(f.src) != pl.domain_of(f.dst)) {
      ++inter;
      EXPECT_EQ(pl.domain_of(f.dst), (pl.domain_of(f.src) + 1) % 4);
      EXPECT_EQ(f.src % 8, f.dst % 8) << "the same local rank (rail) of the next node";
    }
  }
  EXPECT_EQ(inter, 8);
}

// The double binary tree on the same group: chains of 2 in each node (S each way), two mirrored binary trees over
// the 4 nodes. NCCL's tuner prices every node beyond two nodes as 4 tree links of S/2 each way (the busiest node here
// has 3), spread over the node's 2 NICs; Simple reaches 0.92 of the links, x 0.8 at 64 MiB (treeCorrectionFactor).
constexpr double kTreeSimple64MiB = 0.92 * 0.8;
TEST(PlanCollective, TreeAcrossFourNodes)
{
  Placement pl(8, 4, 1, 8);
  auto group = pl.dp_group(0, 0);
  auto phases = plan_collective(Kind::AllReduce, S, group, pl, a100("tree"));
  ASSERT_EQ(phases.size(), 1u);
  EXPECT_STREQ(phases[0].algorithm->name, "tree");
  EXPECT_NEAR(phases[0].latency_s, (8.4 + 2 * (1 * 4.0 + 2 * 14.0) - 5) * kUs, 1e-12);
  // per node: 1 chain link (2 flows), the trees: 3 + 3 links over 4 nodes x 2 local ranks x 2 directions
  ASSERT_EQ(phases[0].flows.size(), 4u * 2 + 6u * 2 * 2);
  // NCCL caps the tree at 2 channels (one per member's NIC) x perChMaxTreeBw 17.8 GB/s (Ampere, more than 2 nodes),
  // x 0.8 at 64 MiB: the phase lasts 2 S at that, each flow stretched alike from the NICs' S / kTreeSimple64MiB.
  const double stretch = (2 * S / (2 * 17.8e9 * 0.8)) / (S / kTreeSimple64MiB / 24e9);
  for (const auto& f : phases[0].flows) {
    if (pl.domain_of(f.src) == pl.domain_of(f.dst))
      EXPECT_DOUBLE_EQ(f.bytes, S / kTreeSimple64MiB * stretch);
    else  // a NIC's 4 links' bytes over its 3 flows
      EXPECT_DOUBLE_EQ(f.bytes, 4 * (S / 2) / 2 / kTreeSimple64MiB / 3 * stretch);
  }
}

// One member per node: a flat ring across the NICs.
TEST(PlanCollective, OneMemberPerNodeIsAFlatInterNodeRing)
{
  Placement pl(4, 8, 1, 8);
  auto phases = plan_collective(Kind::AllReduce, S, pl.dp_group(0, 0), pl, a100());
  ASSERT_EQ(phases.size(), 1u);
  EXPECT_TRUE(phases[0].inter_node);
  ASSERT_EQ(phases[0].flows.size(), 4u);
  for (const auto& f : phases[0].flows)
    EXPECT_DOUBLE_EQ(f.bytes, 1.5 * S);
}

// NVLS on an NVSwitch-3 node in chunks (nvls.cpp): 16 channels x 8 heads, each stream at 1/128 of the links'
// S(1 + 1/n) rate; the chunk by NCCL's rule; each chunk waits 6.7 us, the first round paid once beside the 25 us.
struct NvlsChunks {
  double fraction, round_s;
};
NvlsChunks nvls_chunks(double bytes, double nvlink_Bps)
{
  const double streams = 16 * 8, stream_Bps = nvlink_Bps / 1.125 / streams;
  double c = 131072;
  if (bytes < 64 * streams * c)
    c = 65536;
  if (bytes < 8 * streams * c)
    c = 32768;
  if (bytes < 2 * streams * c)
    c = 16384;
  const double wait_bytes = 6.7e-6 * stream_Bps;
  return {c / (c + wait_bytes), (c + wait_bytes) / stream_Bps};
}

// Every device's link carries S(1 + 1/n) each way at the chunks' fraction of its goodput (64 MiB: 64 KiB chunks).
TEST(PlanCollective, NvlsLoadsEachLinkWithSPlusAShare)
{
  const NvlsChunks ch = nvls_chunks(S, 370.8e9);
  Placement pl(1, 8, 1, 8);
  auto phases = plan_collective(Kind::AllReduce, S, pl.tp_group(0, 0), pl, h100("nvls"));
  ASSERT_EQ(phases.size(), 1u);
  EXPECT_STREQ(phases[0].algorithm->name, "nvls");
  EXPECT_NEAR(phases[0].latency_s, (25 - 2) * kUs + ch.round_s, 1e-12);
  ASSERT_EQ(phases[0].flows.size(), 8u);
  for (const auto& f : phases[0].flows)
    EXPECT_DOUBLE_EQ(f.bytes, (1 + 1.0 / 8) * S / ch.fraction);
}

// ---- closed forms, by hand from NCCL's constants (tuning.cc at 5067397c) -------------------------------------

GroupShape shape(int64_t n, int64_t nodes, const Fabric& f)
{
  GroupShape g;
  g.ranks = n;
  g.nodes = nodes;
  g.nvswitch_generation = f.nvswitch_generation;
  g.nvlink_Bps = f.nvlink_Bps;
  g.nic_Bps = f.nic_Bps;
  return g;
}

TEST(ClosedForm, EachAlgorithmAndProtocol)
{
  using dtsim::collectives::predict;
  const Fabric a = a100(), h = h100("auto");
  // ring, one node of 8 A100: base + 2(n-1) steps, 1.75 S over the link at the protocol's fraction
  EXPECT_DOUBLE_EQ(predict(algorithm("ring"), Protocol::Simple, Kind::AllReduce, S, shape(8, 1, a)).time_s,
                   (8.4 + 14 * 3.4) * kUs + 1.75 * S / 240e9);
  EXPECT_DOUBLE_EQ(predict(algorithm("ring"), Protocol::LL128, Kind::AllReduce, S, shape(8, 1, a)).time_s,
                   (14.0 + 14 * 1.9) * kUs + 1.75 * S / (0.92 * 240e9));
  // LL: half the link, but never above llMaxBw (87.7 GB/s bus bandwidth on Ampere)
  EXPECT_DOUBLE_EQ(predict(algorithm("ring"), Protocol::LL, Kind::AllReduce, S, shape(8, 1, a)).time_s,
                   (6.6 + 14 * 0.6) * kUs + 1.75 * S / 87.7e9);
  EXPECT_DOUBLE_EQ(predict(algorithm("ring"), Protocol::Simple, Kind::ReduceScatter, S, shape(8, 1, a)).time_s,
                   (8.4 + 7 * 3.4) * kUs + 0.875 * S / 240e9);
  // ring across 2 nodes of 8: 30 steps, 2 across; each NIC carries one of 8 channels. NCCL's tuner charges
  // (8.4 + 28 x 3.4 + 2 x 14.0) x 1.4; the run, one loop (16 kernel channels x 16 x 2 MiB > S) of 30 steps at 14 us
  const auto across = predict(algorithm("ring"), Protocol::Simple, Kind::AllReduce, S, shape(16, 2, a));
  EXPECT_DOUBLE_EQ(across.tuner_time_s, (8.4 + 28 * 3.4 + 2 * 14.0) * 1.4 * kUs + 1.875 / 8 * S / 24e9);
  EXPECT_DOUBLE_EQ(across.time_s, (8.4 + 30 * 14.0) * kUs + 1.875 / 8 * S / 24e9);
  // tree across 4 nodes of 8: 2((k-1) intra + log2 N inter); the NVLink chain (2 S at 0.92, x 0.8 at 64 MiB) beside
  // 4 tree links of S/2 over 8 NICs, both under NCCL's cap of 8 channels x perChMaxTreeBw 17.8 GB/s (Ampere, more than
  // 2 nodes; the tree's algorithm bandwidth is half its bus bandwidth)
  EXPECT_DOUBLE_EQ(predict(algorithm("tree"), Protocol::Simple, Kind::AllReduce, S, shape(32, 4, a)).time_s,
                   (8.4 + 2 * (7 * 4.0 + 2 * 14)) * kUs +
                       std::max({2 * S / (0.92 * 0.8 * 240e9), 2.0 / 8 * S / (0.92 * 0.8 * 24e9),
                                 2 * S / (8 * 17.8e9 * 0.8)}));
  // NVLS, one H100 node: 25 us and a chunk's round, S(1 + 1/8) at the chunks' fraction of the link
  const NvlsChunks ch = nvls_chunks(S, 370.8e9);
  EXPECT_DOUBLE_EQ(predict(algorithm("nvls"), Protocol::Simple, Kind::AllReduce, S, shape(8, 1, h)).time_s,
                   25 * kUs + ch.round_s + 1.125 * S / (ch.fraction * 370.8e9));
  // NVLS tree, 2 H100 nodes, NCCL 2.30.7 (5067397c): 25 + 2 x 1 x 20.9 us; NCCL caps its bus bandwidth at 8 channels
  // x perChMaxNVLSTreeBw 57.7 GB/s (Hopper, 2 nodes), a ring's 2(n-1)/n S at that
  GroupShape h2 = shape(16, 2, h);
  h2.nccl_version = 23007;
  // The run adds the pipeline's fill: the first 128 KiB chunk over 2 network hops, each at a 16th of a NIC (16
  // channels through each head's NIC); 64 KiB chunks from 4 nodes up.
  const double fill2 = 2 * 131072 * 16 / 48.5e9, fill4 = 4 * 65536 * 16 / 48.5e9;
  EXPECT_DOUBLE_EQ(predict(algorithm("nvls_tree"), Protocol::Simple, Kind::AllReduce, S, h2).time_s,
                   (25 + 2 * 20.9) * kUs + fill2 +
                       std::max({1.125 * S / (0.85 * 370.8e9), 2 * 0.5 / 8 * S / 48.5e9, 1.875 * S / (8 * 57.7e9)}));
  // Before NCCL 2.28.3 (and where the stack does not publish its NCCL): 25 + 2 x 14 us on 2 nodes, 25 + 4 x 14 on 4;
  // each head's NIC at the network's speed on 2 nodes and half of it beyond, algorithm bandwidth 5/6 of the bus
  // bandwidth (6/5 and 12/5 of a head's share over its NIC), no per-channel cap
  EXPECT_DOUBLE_EQ(predict(algorithm("nvls_tree"), Protocol::Simple, Kind::AllReduce, S, shape(16, 2, h)).time_s,
                   (25 + 2 * 14.0) * kUs + fill2 + std::max(1.125 * S / (5.0 / 6 * 370.8e9), 1.2 / 8 * S / 48.5e9));
  EXPECT_DOUBLE_EQ(predict(algorithm("nvls_tree"), Protocol::Simple, Kind::AllReduce, S, shape(32, 4, h)).time_s,
                   (25 + 4 * 14.0) * kUs + fill4 + std::max(1.125 * S / (5.0 / 6 * 370.8e9), 2.4 / 8 * S / 48.5e9));
}

TEST(Selection, NcclPicksTheFastestCandidate)
{
  using dtsim::collectives::choose;
  const Fabric h = h100("auto", "auto");
  // small messages: LL; large: NVLS on an NVSwitch-3 node, the ring on an NVSwitch-2 node
  EXPECT_EQ(choose(Kind::AllReduce, 4096, shape(8, 1, h), h.choice).protocol, Protocol::LL);
  EXPECT_STREQ(choose(Kind::AllReduce, 1 << 30, shape(8, 1, h), h.choice).algorithm->name, "nvls");
  const Fabric a = a100("auto", "auto");
  auto big = choose(Kind::AllReduce, 1 << 30, shape(8, 1, a), a.choice);
  EXPECT_STREQ(big.algorithm->name, "ring");
  EXPECT_EQ(big.protocol, Protocol::Simple);
  // reduce-scatter has only the ring
  EXPECT_STREQ(choose(Kind::ReduceScatter, 1 << 30, shape(8, 1, h), h.choice).algorithm->name, "ring");
  // forced: NVLS where it cannot run (NVSwitch 2) falls back to the ring
  EXPECT_STREQ(choose(Kind::AllReduce, 1 << 30, shape(8, 1, a), {"nvls", ""}).algorithm->name, "ring");
  auto forced = choose(Kind::AllReduce, 1 << 30, shape(8, 1, h), {"ring", "ll128"});
  EXPECT_STREQ(forced.algorithm->name, "ring");
  EXPECT_EQ(forced.protocol, Protocol::LL128);
}

// The catalog holds one file per algorithm, named after it: the registry lists each file's entry (a file without its
// registry line fails here), and nothing else; each name resolves to its entry, which describes itself.
TEST(Registry, ListsEveryFileOfTheCatalog)
{
  std::set<std::string> files;
  for (const auto& f : std::filesystem::directory_iterator(source_path("sim/collectives/algorithms")))
    files.insert(f.path().stem().string());
  std::set<std::string> registered;
  for (const auto& a : dtsim::collectives::algorithms()) {
    EXPECT_TRUE(registered.insert(a.name).second) << a.name << " registered twice";
    EXPECT_EQ(&algorithm(a.name), &a);
    EXPECT_NE(std::string(a.summary), "") << a.name;
    EXPECT_NE(std::string(a.applies), "") << a.name;
    EXPECT_TRUE(a.applicable && a.bandwidth_fraction && a.bus_cap_Bps && a.cost && a.ll_capped_s && a.lay_flows)
        << a.name;
  }
  EXPECT_EQ(registered, files);
  EXPECT_EQ(dtsim::collectives::find_algorithm("rign"), nullptr);
}

TEST(Registry, NamesForYamlAndDocs)
{
  std::vector<std::string> names{"auto"};
  for (const auto& a : dtsim::collectives::algorithms())
    names.push_back(a.name);
  EXPECT_EQ(dtsim::collectives::algorithm_choices(), names);
  EXPECT_EQ(dtsim::collectives::protocol_choices(), (std::vector<std::string>{"auto", "ll", "ll128", "simple"}));
  // The hardware and stack files' keys offer the registry's names, and the reference's table is made from the keys
  // (docs.yaml_reference_is_current).
  EXPECT_EQ(dtsim::hardware::keys::kCollectiveAlgorithm.choices, dtsim::collectives::algorithm_choices());
  EXPECT_EQ(dtsim::hardware::keys::kCollectiveProtocol.choices, dtsim::collectives::protocol_choices());
}

// ---- end to end: tensor-parallel all-reduces on one node (one SimGrid engine per process) -----------------

// tests/unit/data/tp8.yaml: tiny GPT (l = 4, h = 256), tp 8, pp 1, dp 1, b = 4, s = 512, 2 microbatches, bf16.
constexpr double kL = 4, kH = 256, kB = 4, kSeq = 512, kMicrobatches = 2;

// Megatron-LM per microbatch: 2 + 2 all-reduces per layer, 1 after the vocabulary-parallel embedding lookup
// (forward), 1 for the gradient of the head's input (backward); each of b*s*h 16-bit elements.
constexpr double kAllReducesPerMicrobatch = 4 * kL + 2;
constexpr double kTensorBytes = kB * kSeq * kH * 2;

dtsim::scenario::ScenarioSpec tp8(std::vector<std::string> overrides)
{
  return dtsim::scenario::load_scenario(source_path("tests/unit/data/tp8.yaml"), overrides);
}

// One all-reduce of the tp8 tensor on one DGX A100 node, by hand, per forced algorithm and protocol.
double hand_all_reduce(const std::string& proto, double bytes)
{
  if (proto == "ll128")
    return (14.0 + 14 * 1.9) * kUs + 1.75 * bytes / (0.92 * 240e9);
  if (proto == "ll")
    return (6.6 + 14 * 0.6) * kUs + 1.75 * bytes / 87.7e9;
  return (8.4 + 14 * 3.4) * kUs + 1.75 * bytes / 240e9;
}

double expected_exposed_tp(const std::string& proto = "simple")
{
  return kMicrobatches * kAllReducesPerMicrobatch * hand_all_reduce(proto, kTensorBytes);
}

std::vector<std::string> forced(const std::string& algo, const std::string& proto, std::vector<std::string> more = {})
{
  more.push_back("hardware.collectives.algorithm=" + algo);
  more.push_back("hardware.collectives.protocol=" + proto);
  return more;
}

// The step program carries exactly the hand-counted collectives (no engine needed).
TEST(TensorParallelTraffic, StepProgramCountsNarayananAllReduces)
{
  for (bool sp : {false, true}) {
    SCOPED_TRACE(sp ? "sp" : "no sp");
    auto s = tp8({sp ? "parallel.sp=true" : "parallel.sp=false"});
    ASSERT_EQ(double(s.microbatches), kMicrobatches);
    dtsim::model::Transformer t(s.model);
    dtsim::kernels::ComputeModel cm(s.hardware.device, s.training.precision);
    auto prog = dtsim::replay::build_step_program(s, derive_plan(s), t, cm);
    int all_reduce = 0, reduce_scatter = 0, all_gather = 0;
    for (const auto* pass : {&prog.forward[0][0], &prog.backward[0][0]})
      for (const auto& st : *pass) {
        if (st.kind != dtsim::replay::Step::Kind::TpCollective)
          continue;
        EXPECT_DOUBLE_EQ(st.bytes, kTensorBytes);
        all_reduce += st.collective == dtsim::model::TpCollective::AllReduce;
        reduce_scatter += st.collective == dtsim::model::TpCollective::ReduceScatter;
        all_gather += st.collective == dtsim::model::TpCollective::AllGather;
      }
    if (!sp) {
      EXPECT_EQ(all_reduce, int(kAllReducesPerMicrobatch));
      EXPECT_EQ(reduce_scatter + all_gather, 0);
    } else {  // each all-reduce becomes a reduce-scatter plus an all-gather; each column-parallel layer's backward
              // (two per layer and the head) gathers its input again, beside its input-gradient GEMM
      EXPECT_EQ(all_reduce, 0);
      EXPECT_EQ(reduce_scatter, int(kAllReducesPerMicrobatch));
      EXPECT_EQ(all_gather, int(kAllReducesPerMicrobatch + 2 * kL + 1));
      int beside = 0;
      for (const auto& st : prog.backward[0][0])
        beside += st.beside_next;
      EXPECT_EQ(beside, int(2 * (2 * kL + 1)));  // that gather and the input gradient's reduce-scatter
    }
  }
}

void check_exposed_tp(const std::vector<std::string>& overrides, double expected)
{
  auto s = tp8(overrides);
  auto r = dtsim::app::simulate(s, false);
  ASSERT_TRUE(r.simulated);
  const auto& b = r.replay.average;
  std::printf("[tp comm] %s: exposed TP %.9g s, expected %.9g s (%.0f all-reduces of %.0f B, %.4g us each)\n",
              dtsim::scenario::to_string(s.fidelity), b.exposed_tp_comm_s, expected,
              kMicrobatches * kAllReducesPerMicrobatch, kTensorBytes,
              1e6 * expected / (kMicrobatches * kAllReducesPerMicrobatch));
  EXPECT_LT(rel_diff(b.exposed_tp_comm_s, expected), 0.01) << b.exposed_tp_comm_s << " vs " << expected;
  EXPECT_EQ(b.exposed_pp_comm_s, 0.0);
  EXPECT_EQ(b.exposed_dp_comm_s, 0.0);
}

TEST(TensorParallelTiming, FoldedMatchesRingTime) { check_exposed_tp(forced("ring", "simple"), expected_exposed_tp()); }
TEST(TensorParallelTiming, FullFidelityMatchesRingTime)
{
  check_exposed_tp(forced("ring", "simple", {"simulation.fidelity=full"}), expected_exposed_tp());
}
TEST(TensorParallelTiming, RingLL128MatchesClosedForm)
{
  check_exposed_tp(forced("ring", "ll128"), expected_exposed_tp("ll128"));
}
TEST(TensorParallelTiming, RingLLMatchesClosedForm)
{
  check_exposed_tp(forced("ring", "ll"), expected_exposed_tp("ll"));
}
// What a microbatch's TP collectives, each c seconds on the tp8 node, show by hand: whole, or, beside the compute
// step after them (w seconds, giving up 16 of the A100's 108 SMs while the collective runs), c - w / (1 - 16/108)
// where the collective is the longer.
struct HandExposure {
  double per_microbatch = 0;
  int collectives = 0, beside = 0, all_reduces = 0;
};
HandExposure hand_exposed_tp(const std::vector<std::string>& overrides, double c)
{
  auto s = tp8(overrides);
  dtsim::model::Transformer t(s.model);
  dtsim::kernels::ComputeModel cm(s.hardware.device, s.training.precision, s.stack);
  auto prog = dtsim::replay::build_step_program(s, derive_plan(s), t, cm);
  HandExposure e;
  for (const auto* pass : {&prog.forward[0][0], &prog.backward[0][0]})
    for (size_t i = 0; i < pass->size(); ++i) {
      const auto& st = (*pass)[i];
      if (st.kind != dtsim::replay::Step::Kind::TpCollective)
        continue;
      ++e.collectives;
      e.all_reduces += st.collective == dtsim::model::TpCollective::AllReduce;
      if (!st.beside_next) {
        e.per_microbatch += c;
        continue;
      }
      ++e.beside;
      if (i + 1 >= pass->size()) {
        ADD_FAILURE() << "a collective beside nothing ends the pass";
        continue;
      }
      const double w = (*pass)[i + 1].seconds;
      e.per_microbatch += std::max(0.0, c - w / (1 - 16.0 / 108));
    }
  return e;
}

// Reduce-scatter + all-gather: the bandwidth of one all-reduce, the latency of two 7-step rings. In backward, a
// column-parallel layer's gather and reduce-scatter run beside its GEMMs.
TEST(TensorParallelTiming, SequenceParallelMatchesRingTime)
{
  const double rs = (8.4 + 7 * 3.4) * kUs + 0.875 * kTensorBytes / 240e9;
  const auto overrides = forced("ring", "simple", {"parallel.sp=true"});
  check_exposed_tp(overrides, kMicrobatches * hand_exposed_tp(overrides, rs).per_microbatch);
}
// Without sequence parallelism, each column-parallel layer's (QKV, fc1, and the head's) input-gradient all-reduce
// runs beside its weight-gradient GEMM; the other all-reduces show whole.
TEST(TensorParallelTiming, AsyncAllReduceBesideWeightGradient)
{
  const auto overrides = forced("ring", "simple", {"parallel.tp_async_allreduce=true"});
  const auto e = hand_exposed_tp(overrides, hand_all_reduce("simple", kTensorBytes));
  EXPECT_EQ(e.all_reduces, e.collectives);
  EXPECT_EQ(e.beside, int(2 * kL + 1));
  check_exposed_tp(overrides, kMicrobatches * e.per_microbatch);  // (switched off: FoldedMatchesRingTime)
}
// The tree on one node: the chain carries 2 S each way at 0.92 of the link, x 0.5 at 1 MiB (treeCorrectionFactor).
TEST(TensorParallelTiming, TreeMatchesClosedForm)
{
  const double t = (8.4 + 2 * 7 * 4.0) * kUs + 2 * kTensorBytes / (0.92 * 0.5 * 240e9);
  check_exposed_tp(forced("tree", "simple", {"simulation.fidelity=full"}),
                   kMicrobatches * kAllReducesPerMicrobatch * t);
}
TEST(TensorParallelTiming, TreeFoldedMatchesClosedForm)
{
  const double t = (8.4 + 2 * 7 * 4.0) * kUs + 2 * kTensorBytes / (0.92 * 0.5 * 240e9);
  check_exposed_tp(forced("tree", "simple"), kMicrobatches * kAllReducesPerMicrobatch * t);
}
// NVLS on a DGX H100 node, full fidelity (every flow simulated) and folded (closed form of the exclusive links).
void check_nvls(const char* fidelity)
{
  const NvlsChunks ch = nvls_chunks(kTensorBytes, 370.8e9);  // 1 MiB: 16 KiB chunks
  const double t = 25 * kUs + ch.round_s + 1.125 * kTensorBytes / (ch.fraction * 370.8e9);
  check_exposed_tp(forced("nvls", "auto", {"hardware=../../../hardware/dgx-h100.yaml", "stack=none", fidelity}),
                   kMicrobatches * kAllReducesPerMicrobatch * t);
}
TEST(TensorParallelTiming, NvlsMatchesClosedFormFull) { check_nvls("simulation.fidelity=full"); }
TEST(TensorParallelTiming, NvlsMatchesClosedFormFolded) { check_nvls("simulation.fidelity=folded"); }

}  // namespace

// ---- end to end: the data-parallel gradient all-reduce (dp_overlap off: one all-reduce after backward) -------

// tests/unit/data/dp8.yaml: tiny GPT, dp 8, tp 1, pp 1. Gradients: every parameter in 16 bits (no software stack,
// whose fp32 main gradients would double the bytes). tiny-gpt by hand
// (learned positions at s = 512, tied embeddings): 12*l*h^2 + 13*l*h + (V + s)*h + 2h (final norm) = 3,552,768.
constexpr double kTinyParams = 12 * kL * kH * kH + 13 * kL * kH + (1024 + 512) * kH + 2 * kH;
constexpr double kGradBytes = 2 * kTinyParams;

TEST(DataParallelTiming, FlatRingInOneNode)
{
  static_assert(kTinyParams == 3552768.0, "tiny-gpt.yaml states 3,552,768 parameters");
  auto s = dtsim::scenario::load_scenario(source_path("tests/unit/data/dp8.yaml"),
                                          forced("ring", "simple", {"stack=none"}));
  auto r = dtsim::app::simulate(s, false);
  ASSERT_TRUE(r.simulated);
  const double expected = hand_all_reduce("simple", kGradBytes);
  const auto& b = r.replay.average;
  std::printf("[dp comm] one node: exposed DP %.9g s, expected %.9g s\n", b.exposed_dp_comm_s, expected);
  EXPECT_LT(rel_diff(b.exposed_dp_comm_s, expected), 0.01);
  EXPECT_EQ(b.exposed_tp_comm_s, 0.0);
}

// dp 16 over two nodes of 8, forced ring: 8 channels, each NIC carries one (1.875 S / 8 at 24 GB/s, slower than
// the 7/8 of it on NVLink); forced tree: the NVLink chain (2 S at 0.92 of 240 GB/s) is slower than the NICs.
void check_two_nodes(const std::string& algo, double expected)
{
  auto s = dtsim::scenario::load_scenario(
      source_path("tests/unit/data/dp8.yaml"),
      forced(algo, "simple", {"devices=16", "parallel.dp=16", "training.global_batch=64", "stack=none"}));
  auto r = dtsim::app::simulate(s, false);
  ASSERT_TRUE(r.simulated);
  const auto& b = r.replay.average;
  std::printf("[dp comm] two nodes, %s: exposed DP %.9g s, expected %.9g s\n", algo.c_str(), b.exposed_dp_comm_s,
              expected);
  EXPECT_LT(rel_diff(b.exposed_dp_comm_s, expected), 0.01);
}

TEST(DataParallelTiming, RingAcrossTwoNodes)
{
  // one loop of the Simple ring (16 kernel channels x 16 x 2 MiB > the gradients): 30 steps at the network's 14 us,
  // more than NCCL's tuner charges ((8.4 + 28 x 3.4 + 2 x 14.0) x 1.4)
  check_two_nodes("ring", (8.4 + 30 * 14.0) * kUs + 1.875 / 8 * kGradBytes / 24e9);
}

// NCCL's treeCorrectionFactor for Simple (tuning.cc at 5067397c), by floor(log2(bytes / 64)).
double tree_simple_correction(double bytes)
{
  constexpr double row[23] = {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
                              .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9};
  const int column = int(std::floor(std::log2(bytes / 64)));
  return column < 23 ? row[column] : 1.0;
}

TEST(DataParallelTiming, TreeAcrossTwoNodes)
{
  // NCCL caps the tree at 8 channels x perChMaxTreeBw 23.6 GB/s (Ampere, 2 nodes), below the chain's 0.92 x 240
  check_two_nodes("tree", (8.4 + 2 * (7 * 4.0 + 1 * 14.0)) * kUs +
                              2 * kGradBytes /
                                  (tree_simple_correction(kGradBytes) * std::min(0.92 * 240e9, 8 * 23.6e9)));
}

// tp 8 x dp 2 on two nodes: eight data-parallel groups {r, 8 + r}, one member per node, each a two-rank ring on
// its own NIC pair (rail-optimized, one NIC per GPU). Each TP rank all-reduces its own shard of the gradients:
// per rank, by hand (Megatron-LM: matrices and their biases split 8 ways; layer norms, the attention-output and
// fc2 biases, and the position table replicated): l * ((12h^2 + 7h)/8 + 6h) + V*h/8 + s*h + 2h = 564,608.
constexpr double kTinyParamsPerTp8Rank =
    kL * ((12 * kH * kH + 7 * kH) / 8 + 6 * kH) + 1024 * kH / 8 + 512 * kH + 2 * kH;

void check_dp_with_tp(const std::vector<std::string>& extra)
{
  static_assert(kTinyParamsPerTp8Rank == 564608.0, "hand count");
  std::vector<std::string> o = {"devices=16", "parallel.dp=2", "parallel.dp_overlap=false",
                                "training.global_batch=16", "stack=none"};
  o.insert(o.end(), extra.begin(), extra.end());
  auto s = tp8(forced("ring", "simple", o));
  auto r = dtsim::app::simulate(s, false);
  ASSERT_TRUE(r.simulated);
  // two ranks on two nodes: 2 steps, both across (one member per node: NCCL's tree network step, 14 us), x 1.4
  const double expected = (8.4 + 2 * 14.0) * 1.4 * kUs + 2 * kTinyParamsPerTp8Rank / 24e9;
  const auto& b = r.replay.average;
  std::printf("[dp comm] tp 8 x dp 2 (%s): exposed DP %.9g s, expected %.9g s; exposed TP %.9g s, expected %.9g s\n",
              dtsim::scenario::to_string(s.fidelity), b.exposed_dp_comm_s, expected, b.exposed_tp_comm_s,
              expected_exposed_tp());
  EXPECT_LT(rel_diff(b.exposed_dp_comm_s, expected), 0.01);
  EXPECT_LT(rel_diff(b.exposed_tp_comm_s, expected_exposed_tp()), 0.01);  // TP traffic is unchanged by dp
}

TEST(DataParallelTiming, TensorParallelShardsFolded) { check_dp_with_tp({}); }
TEST(DataParallelTiming, TensorParallelShardsFull) { check_dp_with_tp({"simulation.fidelity=full"}); }
