// The collective model against whole nccl-tests curves, from 1 MiB to the largest size measured, each on the
// hardware file of its system (issue 34, item 2): 8 x H100 (hardware/dgx-h100.yaml; all-reduce with NCCL's choice
// and with the ring forced, all-gather, reduce-scatter), 8 x A100 (hardware/dgx-a100-80gb.yaml; all-reduce) and
// 4 x 8 H100 (hardware/dgx-h100.yaml; all-reduce, all-gather). Published figures: ../shared/reference/
// collectives-and-kernels.md, sections A.1.a, A.1.b, A.1.c, A.2.a and A.3.a (sources and grades there). Bus
// bandwidth as nccl-tests reports it: all-reduce S / t x 2(n-1)/n, all-gather and reduce-scatter S / t x (n-1)/n,
// S the whole buffer. Every point's error is printed (docs/validation.md, "Collectives against nccl-tests").
//
// The bound is 10% at every point. The points the model misses are declared below (`true`), curve by curve;
// measured 2026-11-27, reasons in docs/validation.md, section 9: within a node the ring's LL128 at 4 MiB, the A100's
// medium sizes (1-2 and 8-256 MiB) and H100 all-gather's 32-256 MiB run slower than the model (the A100's 4 MiB is
// within 10% with the LL128 chunks its release rounds, collectives/algorithms/ring.cpp), and 1-4 MiB single-process
// (-g 8) runs carry a ~35-42 us floor (all-gather and reduce-scatter at 4 MiB since LL's cap converts to time with
// their own n - 1 steps, as NCCL's tuner does); across 4 H100 nodes the all-reduce's NVLS tree at 2 MiB and the
// all-gather's ring LL128 (1-64 MiB). The all-reduce's tree LL128 at 1 MiB is within 10% with its pipeline's fill, the
// first pass crossing every hop (collectives/algorithms/tree.cpp). The Simple ring across the 4 nodes (all-reduce from
// 256 MiB, all-gather from 128 MiB) is within 4% since each of its steps pays the network's step latency on every loop
// of its chunks (collectives/algorithms/ring.cpp); the NVLS tree (all-reduce 4-128 MiB) within 7% as NCCL 2.24.3, the
// log's release, models it, with its pipeline's fill (algorithms/nvls_tree.cpp). Each curve runs with the NCCL release
// its log states (`nccl`; where it states none, 0, or the release its date bounds where every release it may have run
// prices the model alike: A.2.a). The NIC count is the system's own description: "3.2 Tbps InfiniBand" per node
// (ZiyanIshani/vpbenchmarking README, system table) with "400 Gbps per port" (AI @ Georgia Tech's project page for the
// same benchmark, aigt.framer.website/sponsor-projects), 8 ports; the summary's "3 active ports per node" cannot carry
// the measured all-gather (3 x 48.5 GB/s < 324 GB/s). `NcclCurves.*` asserts that every other point is within 10% and
// that every declared miss still misses (so that a change that brings one within the bound must say so here). ctest's
// validation.nccl_curves runs the strict form, every point held to 10% (DTSIM_NCCL_CURVES_STRICT=1), and is expected to
// fail until the misses are fixed (tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hardware/hardware_yaml.hpp"
#include "parallel/collective.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"
#include "test_units.hpp"

namespace {

using dtsim::collectives::Kind;
using dtsim::test::MiB;

struct CurvePoint {
  double bytes, published_GBps;
  bool known_miss = false;  ///< declared below: the model misses it by more than 10%
};

struct Curve {
  const char* name;
  const char* hardware;  ///< a hardware file of the source tree
  int64_t nodes;
  Kind kind;
  const char* algorithm;  ///< "" for NCCL's choice
  /// the NCCL release the log states, as NCCL_VERSION_CODE; 0 where it states none (A.2.a: above)
  int nccl;
  std::vector<CurvePoint> points;
};

struct Result {
  double simulated_GBps = 0, error = 0;
  std::string chosen;
};

Result simulate(const Curve& c, const CurvePoint& p)
{
  dtsim::Diagnostics diag;
  dtsim::scenario::ScenarioSpec s;
  s.hardware = dtsim::hardware::load_hardware(dtsim::test::source_path(c.hardware), diag);
  diag.throw_if_any();
  s.stack.nccl_version = c.nccl;
  auto fabric = dtsim::collectives::fabric_of(s);
  fabric.choice.algorithm = c.algorithm;
  const int64_t per_node = s.hardware.domain_devices(), n = per_node * c.nodes;
  const dtsim::parallel::Placement placement(n, 1, 1, per_node);
  std::vector<int64_t> group;
  for (int64_t d = 0; d < n; ++d)
    group.push_back(d);
  const auto shape = dtsim::collectives::group_shape(group, placement, fabric);
  const auto pred = dtsim::collectives::choose(c.kind, p.bytes, shape, fabric.choice);
  const double ratio = c.kind == Kind::AllReduce ? 2.0 * double(n - 1) / double(n) : double(n - 1) / double(n);
  Result r;
  r.simulated_GBps = p.bytes / pred.time_s * ratio / 1e9;
  r.error = r.simulated_GBps / p.published_GBps - 1;
  r.chosen = std::string(pred.algorithm->name) + "/" + dtsim::collectives::protocol_def(pred.protocol).name;
  return r;
}

// Prints the curve; checks every point against the 10% bound (strict), or the declared misses as declared.
void check(const Curve& c)
{
  const bool strict = std::getenv("DTSIM_NCCL_CURVES_STRICT") != nullptr;
  std::printf("\n%s (%s)\n| size | published GB/s | simulated GB/s | error | algorithm/protocol |\n"
              "|---:|---:|---:|---:|---|\n", c.name, c.hardware);
  for (const auto& p : c.points) {
    const Result r = simulate(c, p);
    const bool within = std::fabs(r.error) <= 0.10;
    std::printf("| %.0f MiB | %.2f | %.2f | %+.1f%% | %s%s |\n", p.bytes / MiB, p.published_GBps, r.simulated_GBps,
                100 * r.error, r.chosen.c_str(), p.known_miss ? " (known miss)" : "");
    if (strict || !p.known_miss)
      EXPECT_TRUE(within) << c.name << " at " << p.bytes / MiB << " MiB: " << 100 * r.error << "%";
    else
      EXPECT_FALSE(within) << c.name << " at " << p.bytes / MiB
                           << " MiB is now within 10%: remove it from the declared misses";
  }
}

// 8 x H100, one process per GPU, NCCL's default (NVLS from 2 MiB): reference A.1.a.
TEST(NcclCurves, H100NodeAllReduce)
{
  check({"8 x H100, all-reduce, NCCL's choice (A.1.a, NVIDIA/dgxc-benchmarking)", "hardware/dgx-h100.yaml", 1,
         Kind::AllReduce, "", 0,
         {{1 * MiB, 67.04}, {2 * MiB, 86.94}, {4 * MiB, 135.44, true}, {8 * MiB, 176.77}, {16 * MiB, 237.21},
          {32 * MiB, 294.69}, {64 * MiB, 361.67}, {128 * MiB, 400.53}, {256 * MiB, 422.25}, {512 * MiB, 436.79},
          {1024 * MiB, 466.33}, {2048 * MiB, 473.37}, {4096 * MiB, 477.24}, {8192 * MiB, 480.16},
          {16384 * MiB, 479.90}}});
}

// 8 x H100, NCCL_ALGO=RING, NCCL 2.26.2: reference A.1.b.
TEST(NcclCurves, H100NodeAllReduceRing)
{
  check({"8 x H100, all-reduce, ring (A.1.b, together-nccl-tests)", "hardware/dgx-h100.yaml", 1, Kind::AllReduce,
         "ring", 22602,
         {{1 * MiB, 43.81, true}, {2 * MiB, 87.40}, {4 * MiB, 137.23, true}, {8 * MiB, 182.95}, {16 * MiB, 234.58},
          {32 * MiB, 274.42}, {64 * MiB, 319.78}, {128 * MiB, 333.11}, {256 * MiB, 346.77}, {512 * MiB, 353.20},
          {1024 * MiB, 360.78}, {2048 * MiB, 363.99}, {4096 * MiB, 366.75}, {8192 * MiB, 368.15}}});
}

// 8 x H100, single process driving 8 GPUs (-g 8), NCCL 2.26.2: reference A.1.c.
TEST(NcclCurves, H100NodeAllGather)
{
  check({"8 x H100, all-gather (A.1.c, together-nccl-tests)", "hardware/dgx-h100.yaml", 1, Kind::AllGather, "", 22602,
         {{1 * MiB, 22.88, true}, {2 * MiB, 44.93, true}, {4 * MiB, 87.85, true}, {8 * MiB, 154.65}, {16 * MiB, 207.54},
          {32 * MiB, 233.64, true}, {64 * MiB, 277.79, true}, {128 * MiB, 302.10, true}, {256 * MiB, 320.47, true},
          {512 * MiB, 335.36}, {1024 * MiB, 344.57}, {2048 * MiB, 350.92}, {4096 * MiB, 355.04},
          {8192 * MiB, 359.02}}});
}

TEST(NcclCurves, H100NodeReduceScatter)
{
  check({"8 x H100, reduce-scatter (A.1.c, together-nccl-tests)", "hardware/dgx-h100.yaml", 1, Kind::ReduceScatter,
         "", 22602,
         {{1 * MiB, 22.48, true}, {2 * MiB, 42.17, true}, {4 * MiB, 88.39, true}, {8 * MiB, 145.51}, {16 * MiB, 204.25},
          {32 * MiB, 247.52}, {64 * MiB, 283.71}, {128 * MiB, 308.73}, {256 * MiB, 326.35}, {512 * MiB, 337.93},
          {1024 * MiB, 345.79}, {2048 * MiB, 356.01}, {4096 * MiB, 358.33}, {8192 * MiB, 362.16}}});
}

// 8 x A100, -g 8: reference A.2.a. The log states no release; it was published on 2023-12-15 (stas00/ml-engineering
// 48b75dd), so it ran NCCL 2.19.4 (2023-11-13) or earlier. It runs here under 2.19.4: what the model reads of the
// release on one A100 node, the ring's LL at a quarter of the bus bandwidth and llMaxBws' Ampere entry 87.7 GB/s
// (tuning.cc, v2.12.12-1 to v2.20.5-1) and the all-reduce's LL128 chunks rounded to 19,200 B (device/all_reduce.h,
// v2.5.6-1 to v2.19.4-1), is the same in every release from v2.12.12-1 to v2.19.4-1 (collectives/algorithms/ring.cpp).
TEST(NcclCurves, A100NodeAllReduce)
{
  check({"8 x A100, all-reduce (A.2.a, stas00/ml-engineering)", "hardware/dgx-a100-80gb.yaml", 1, Kind::AllReduce,
         "", 21904,
         {{1 * MiB, 18.00, true}, {2 * MiB, 36.18, true}, {4 * MiB, 72.33}, {8 * MiB, 109.93, true},
          {16 * MiB, 106.16, true}, {32 * MiB, 138.49, true}, {64 * MiB, 171.54, true}, {128 * MiB, 176.92, true},
          {256 * MiB, 194.07, true}, {512 * MiB, 222.72}, {1024 * MiB, 229.04}, {2048 * MiB, 231.41},
          {4096 * MiB, 233.88}, {8192 * MiB, 234.61},
          {16384 * MiB, 234.89}}});
}

// 4 x 8 H100, NCCL 2.24.3, default algorithm, 8 x 400G per node (the system's description, above): reference A.3.a.
TEST(NcclCurves, H100FourNodesAllReduce)
{
  check({"4 x 8 H100, all-reduce (A.3.a, ZiyanIshani/vpbenchmarking)", "hardware/dgx-h100.yaml", 4,
         Kind::AllReduce, "", 22403,
         {{1 * MiB, 21.97}, {2 * MiB, 26.27, true}, {4 * MiB, 50.63}, {8 * MiB, 70.61}, {16 * MiB, 119.48},
          {32 * MiB, 174.28}, {64 * MiB, 224.38}, {128 * MiB, 275.26}, {256 * MiB, 239.78}, {512 * MiB, 290.67},
          {1024 * MiB, 324.48}, {2048 * MiB, 328.11}, {4096 * MiB, 329.36}, {8192 * MiB, 330.93}}});
}

TEST(NcclCurves, H100FourNodesAllGather)
{
  check({"4 x 8 H100, all-gather (A.3.a, ZiyanIshani/vpbenchmarking)", "hardware/dgx-h100.yaml", 4,
         Kind::AllGather, "", 22403,
         {{1 * MiB, 9.27, true}, {2 * MiB, 18.34, true}, {4 * MiB, 21.03, true}, {8 * MiB, 39.20, true},
          {16 * MiB, 69.74, true}, {32 * MiB, 105.21, true}, {64 * MiB, 166.39, true}, {128 * MiB, 173.43},
          {256 * MiB, 235.32}, {512 * MiB, 286.20}, {1024 * MiB, 320.55}, {2048 * MiB, 322.43}, {4096 * MiB, 323.76},
          {8192 * MiB, 323.53}}});
}

}  // namespace
