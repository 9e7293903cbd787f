// NCCL all-reduce bus bandwidth against message size: the collective model (collectives/algorithm_registry.hpp,
// NCCL's tuner constants, links at their goodput) against published nccl-tests figures
// (../shared/reference/published_runs.md section 5, docs/calibration.md "Collectives"). Bus bandwidth as nccl-tests
// reports it: S / t * 2(n-1)/n. Prints the table; asserts the large-message figures measured on the systems dtsim
// ships (8 x H100 NVLS and ring, DGX A100 across nodes, one NDR NIC) within 10%. The message-size curves of cloud
// systems (AWS P6-B200 with EFA, 2 x 8 H100 on an unnamed network) are printed, not asserted: the model misses
// them by far more than 10% below 1 GiB (docs/calibration.md says by how much and why).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "collectives/algorithm_registry.hpp"
#include "test_units.hpp"

namespace {

using namespace dtsim::collectives;
using dtsim::test::MiB;

struct System {
  const char* name;
  int64_t ranks, nodes;
  int nvswitch;
  double nvlink_Bps, nic_Bps;
};

// NVLink goodputs: links x NCCL's per-link rate (src/graph/topo.h: SM80 20.0, SM90 20.6, SM100 40.1 GB/s).
const System kH100{"8 x H100 (NVSwitch 3)", 8, 1, 3, 18 * 20.6e9, 48.5e9};
const System kH100Ring{"8 x H100, ring only", 8, 1, 2, 18 * 20.6e9, 48.5e9};  // NVLS disabled
const System kA100x2{"2 x DGX A100, 8 x HDR", 16, 2, 2, 12 * 20.0e9, 24e9};
const System kNdr{"2 x 1 GPU, one NDR NIC each", 2, 2, 3, 18 * 20.6e9, 48.5e9};
const System kB200{"AWS P6-B200, 1 node", 8, 1, 4, 18 * 40.1e9, 50e9};
const System kB200x4{"AWS P6-B200, 4 nodes, 8 x EFA 50 GB/s", 32, 4, 4, 18 * 40.1e9, 50e9};
const System kH100x2{"2 x 8 H100 (network not stated; 8 x NDR assumed)", 16, 2, 3, 18 * 20.6e9, 48.5e9};

double busbw(const System& sys, double bytes, std::string* what = nullptr)
{
  GroupShape g;
  g.ranks = sys.ranks;
  g.nodes = sys.nodes;
  g.nvswitch_generation = sys.nvswitch;
  g.nvlink_Bps = sys.nvlink_Bps;
  g.nic_Bps = sys.nic_Bps;
  const Prediction p = choose(Kind::AllReduce, bytes, g, {});
  if (what)
    *what = std::string(p.algorithm->name) + "/" + protocol_def(p.protocol).name;
  return bytes / p.time_s * 2.0 * double(sys.ranks - 1) / double(sys.ranks);
}

struct Point {
  double bytes, published_GBps;
};

double report(const System& sys, const std::vector<Point>& pts, const char* source)
{
  std::printf("\n%s (%s)\n  %10s %10s %10s %8s  %s\n", sys.name, source, "size", "published", "simulated", "error",
              "algorithm/protocol");
  double worst = 0;
  for (const auto& p : pts) {
    std::string what;
    const double sim = busbw(sys, p.bytes, &what) / 1e9;
    const double err = sim / p.published_GBps - 1;
    worst = std::max(worst, std::abs(err));
    std::printf("  %7.0f MiB %10.2f %10.2f %+7.1f%%  %s\n", p.bytes / MiB, p.published_GBps, sim, 100 * err,
                what.c_str());
  }
  return worst;
}

TEST(NcclBusBandwidth, LargeMessagesOnShippedSystems)
{
  EXPECT_LT(report(kH100, {{1024 * MiB, 480}}, "NVLS about 480 GB/s, NVIDIA/nccl-tests#212"), 0.10);
  EXPECT_LT(report(kH100Ring, {{1024 * MiB, 370}}, "plain ring about 370 GB/s, NVIDIA/nccl-tests#212"), 0.10);
  EXPECT_LT(report(kA100x2, {{1024 * MiB, 192}}, "192 GB/s, NVIDIA/nccl#1576 quoting #812"), 0.10);
  EXPECT_LT(report(kNdr, {{1024 * MiB, 48.5}}, "48-49 GB/s per CX-7 NDR NIC, NVIDIA/nccl-tests#267"), 0.10);
}

TEST(NcclBusBandwidth, PublishedCurvesPrinted)
{
  report(kB200,
         {{MiB, 36.06}, {16 * MiB, 254.96}, {64 * MiB, 400.60}, {256 * MiB, 646.11}, {1024 * MiB, 723.34}},
         "stas00/ml-engineering network/README.md, NCCL 2.27.7");
  report(kB200x4,
         {{MiB, 5.37}, {16 * MiB, 64.43}, {64 * MiB, 156.74}, {256 * MiB, 229.09}, {1024 * MiB, 361.99}},
         "same source");
  report(kH100x2,
         {{MiB, 9.68}, {16 * MiB, 32.18}, {64 * MiB, 99.74}, {256 * MiB, 213.19}, {1024 * MiB, 297.86},
          {8192 * MiB, 338.82}},
         "lessizzmore/create-a3mega-ztan-fork ztan-NCCL-test-result");
  // The curve must at least rise with size: latency dominates small messages.
  EXPECT_LT(busbw(kH100, MiB), busbw(kH100, 64 * MiB));
  EXPECT_LT(busbw(kH100, 64 * MiB), busbw(kH100, 1024 * MiB));
}

}  // namespace
