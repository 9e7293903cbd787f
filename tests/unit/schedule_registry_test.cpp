// The schedule registry (scenario/schedule_registry.hpp): it registers every file of the catalog
// (scenario/schedules/), every entry's stage orders run each unit of the stage exactly once, the activations it
// declares held match the warm-up of its order, and the names the YAML check accepts are the registry's, listed in
// docs/yaml-reference.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "scenario/scenario_keys.hpp"
#include "scenario/schedule_registry.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::scenario::BackwardPart;
using dtsim::scenario::schedule_registry;

TEST(ScheduleRegistry, EveryStageRunsEachOfItsUnitsOnce)
{
  for (const auto& d : schedule_registry())
    for (int64_t p : {1, 2, 4})
      for (int64_t v : {1, 2, 3}) {
        if (d.chunked != (v > 1) || (d.chunked && p < 2) || (d.two_directions && p < 2))
          continue;
        if (d.chunk_placement == dtsim::scenario::ChunkPlacement::V && v != 2)  // a V holds two chunks
          continue;
        const int64_t m = 2 * p;  // a multiple of pp, as chunked schedules need; 2 pp, as DualPipe needs
        for (int64_t st = 0; st < p; ++st) {
          SCOPED_TRACE(std::string(d.name) + " p " + std::to_string(p) + " v " + std::to_string(v) + " stage " +
                       std::to_string(st));
          const auto order = d.stage_orders(p, v, m).at(size_t(st));
          std::set<std::tuple<int64_t, int64_t, bool, int>> seen;
          std::set<std::tuple<int64_t, int64_t>> forwarded, inputs;
          int64_t last_group = -1, pairs = 0;
          for (const auto& u : order) {
            EXPECT_TRUE(seen.insert({u.chunk, u.microbatch, u.backward, int(u.part)}).second);
            // A schedule that does not split the backward never does (DualPipe splits some).
            if (!d.splits_backward) {
              EXPECT_EQ(u.part, BackwardPart::Whole);
            }
            if (u.backward) {  // a unit's backward follows its forward on the same stage
              EXPECT_TRUE(forwarded.count({u.chunk, u.microbatch}));
            } else {
              forwarded.insert({u.chunk, u.microbatch});
            }
            if (u.part == BackwardPart::Input)
              inputs.insert({u.chunk, u.microbatch});
            if (u.part == BackwardPart::Weight) {  // W follows its own B
              EXPECT_TRUE(inputs.count({u.chunk, u.microbatch}));
            }
            EXPECT_GE(u.group, last_group);  // groups are consecutive runs
            // A pair (DualPipe's F&B, interleaved 1F1B's steady state): a whole backward beside a forward, in its
            // group; under DualPipe the forward of the other direction.
            if (u.beside_previous) {
              ++pairs;
              EXPECT_TRUE(d.pairs_units);
              const auto& f = order.at(size_t(&u - order.data()) - 1);
              EXPECT_TRUE(u.backward && u.part == BackwardPart::Whole && !f.backward && !f.beside_previous);
              EXPECT_EQ(f.group, u.group);
              if (d.two_directions) {
                EXPECT_NE(f.chunk, u.chunk);
              }
            }
            last_group = u.group;
          }
          // DualPipe's main step (its step 4) pairs every microbatch's forward but for the warm-up's: m / 2 - p + h
          // + 1 rounds of two pairs, and step 5's pp / 2 - h - 1 more (h: the stage's distance to the nearer end).
          if (d.two_directions) {
            const int64_t h = std::min(st, p - 1 - st);
            EXPECT_EQ(pairs, 2 * (m / 2 - p + h + 1) + (p / 2 - h - 1));
          }
          // Interleaved 1F1B pairs every steady-state forward with a backward: all v m of them but the warm-up's.
          if (d.chunked && d.pairs_units) {
            EXPECT_EQ(pairs, std::max<int64_t>(0, v * m - std::min(v * m, (p - st - 1) * 2 + (v - 1) * p)));
          }
          EXPECT_EQ(pairs > 0, d.pairs_units && (d.two_directions || d.chunked)) << "pairs " << pairs;
          // Each direction of DualPipe carries half the microbatches; a W for each split backward.
          const int64_t chunks = d.two_directions ? 2 : v, per_chunk = d.two_directions ? m / 2 : m;
          EXPECT_EQ(int64_t(seen.size()), int64_t(order.size()));
          EXPECT_EQ(int64_t(order.size()), 2 * chunks * per_chunk + int64_t(inputs.size()));
          if (d.splits_backward && !d.two_directions) {
            EXPECT_EQ(int64_t(inputs.size()), v * m);
          }
        }
      }
}

// Microbatches whose forward has run and whose backward (or W, under a split backward) has not, at the most.
int64_t held_at_peak(const std::vector<dtsim::scenario::StageUnit>& order)
{
  int64_t live = 0, peak = 0;
  for (const auto& u : order) {
    if (u.part != BackwardPart::Input)
      live += u.backward ? -1 : 1;
    peak = std::max(peak, live);
  }
  return peak;
}

// Activations held at the peak, counted by walking the order (the most forwards whose backward, or W under a split
// backward, has not run yet), equal what each entry declares for the memory model: 1F1B's p - stage, and for the
// zero-bubble schedules the paper's p on every stage (ZB-H1) and 2p - 1 (ZB-H2; Qi et al. 2024, Sec. 2), ZB-V's 2p
// chunk activations, DualPipe at most pp + 1.
TEST(ScheduleRegistry, DeclaredActivationsMatchTheOrder)
{
  for (const auto& d : schedule_registry()) {
    const int64_t p = 4, v = d.chunked ? 2 : 1, m = 8;  // DualPipe: 4 microbatches each way
    const auto orders = d.stage_orders(p, v, m);
    for (int64_t st = 0; st < p; ++st) {
      const int64_t peak = held_at_peak(orders.at(size_t(st)));
      const int64_t declared = d.in_flight(st, p, v, m);
      SCOPED_TRACE(std::string(d.name) + " stage " + std::to_string(st));
      EXPECT_EQ(declared, peak);
      if (d.name == std::string("zb-h1")) {
        EXPECT_EQ(declared, p);
      }
      if (d.name == std::string("zb-h2")) {
        EXPECT_EQ(declared, 2 * p - 1);
      }
      // ZB-V: 2p chunk activations of half a stage's layers each, 1F1B's p whole microbatches of its first stage
      // (Qi et al., NeurIPS 2024, Sec. 3), on every stage.
      if (d.name == std::string("zb-v")) {
        EXPECT_EQ(declared, 2 * p);
      }
      // DualPipe: pp + 1 chunk activations (deepseek-ai/DualPipe README, "Pipeline Bubbles and Memory Usage"), on the
      // stages nearest the middle, which hold the most.
      if (d.name == std::string("dualpipe")) {
        EXPECT_LE(declared, p + 1);
      }
    }
  }
}

// zb-h2 declares min(2p - 1, m) on every stage without building its list schedule; walking the orders confirms it
// on pipelines of other depths and microbatch counts, fewer microbatches than the bound included.
TEST(ScheduleRegistry, ZbH2DeclaredActivationsHoldOnOtherShapes)
{
  const auto& d = dtsim::scenario::schedule_def("zb-h2");
  for (auto [p, m] : {std::pair<int64_t, int64_t>{2, 3}, {3, 7}, {4, 5}, {8, 3}, {8, 24}, {16, 64}}) {
    const auto orders = d.stage_orders(p, 1, m);
    for (int64_t st = 0; st < p; ++st) {
      const int64_t peak = held_at_peak(orders.at(size_t(st)));
      SCOPED_TRACE("p " + std::to_string(p) + " m " + std::to_string(m) + " stage " + std::to_string(st));
      EXPECT_EQ(d.in_flight(st, p, 1, m), peak);
    }
  }
}

// zb-v declares 2 min(p, m) chunk activations on every stage without building its list schedule; walking the
// orders confirms it on other depths and microbatch counts (fewer than p, odd, not multiples of p).
TEST(ScheduleRegistry, ZbVDeclaredActivationsHoldOnOtherShapes)
{
  const auto& d = dtsim::scenario::schedule_def("zb-v");
  for (auto [p, m] : {std::pair<int64_t, int64_t>{2, 1}, {2, 3}, {3, 7}, {4, 5}, {5, 16}, {8, 3}, {8, 24}, {16, 64}}) {
    const auto orders = d.stage_orders(p, 2, m);
    for (int64_t st = 0; st < p; ++st) {
      const int64_t peak = held_at_peak(orders.at(size_t(st)));
      SCOPED_TRACE("p " + std::to_string(p) + " m " + std::to_string(m) + " stage " + std::to_string(st));
      EXPECT_EQ(d.in_flight(st, p, 2, m), peak);
    }
  }
}

TEST(ScheduleRegistry, NamesAreFoundAndDocumented)
{
  for (const auto& name : dtsim::scenario::schedule_names()) {
    ASSERT_NE(dtsim::scenario::find_schedule(name), nullptr);
    EXPECT_STREQ(dtsim::scenario::schedule_def(name).name, name.c_str());
  }
  EXPECT_EQ(dtsim::scenario::find_schedule("1fb1"), nullptr);
  EXPECT_THROW(dtsim::scenario::schedule_def("1fb1"), dtsim::InternalError);
  // The scenario's `schedule` key offers the registry's names, and the reference's table is made from the key
  // (docs.yaml_reference_is_current).
  EXPECT_EQ(dtsim::scenario::keys::kSchedule.choices, dtsim::scenario::schedule_names());
}

// The catalog holds one file per schedule, named after it ('_' for '-'): the registry lists each file's entry (a
// file without its registry line fails here), and nothing else.
TEST(ScheduleRegistry, ListsEveryFileOfTheCatalog)
{
  std::set<std::string> files;
  for (const auto& f : std::filesystem::directory_iterator(dtsim::test::source_path("sim/scenario/schedules"))) {
    std::string name = f.path().stem().string();
    std::replace(name.begin(), name.end(), '_', '-');
    files.insert(name);
  }
  std::set<std::string> registered;
  for (const auto& d : schedule_registry()) {
    EXPECT_TRUE(registered.insert(d.name).second) << d.name << " registered twice";
    EXPECT_NE(std::string(d.summary), "") << d.name;
    EXPECT_TRUE(d.in_flight && d.stage_orders) << d.name;
  }
  EXPECT_EQ(registered, files);
  for (const auto& name : files)
    EXPECT_NE(dtsim::scenario::find_schedule(name), nullptr) << name;
}

}  // namespace
