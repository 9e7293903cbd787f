// The Chrome trace (dtsim run --trace): slices that partly overlap on one track are moved to extra lanes, so that
// every lane Perfetto draws holds slices that nest or follow each other (issue 14: the wafer trace's "gradients out"
// and "optimizer (MemoryX)" slices were mis-nested). One in-process simulation per TEST (one SimGrid engine per
// process).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/simulate.hpp"
#include "report/run_record.hpp"
#include "report/trace_writer.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::replay::TraceEvent;
using dtsim::report::trace_lanes;

struct Slice {
  double start, end;
};

// The number of slices of `slices` that partly overlap an earlier one (start inside it, end past it), up to the
// rounding of the trace's microseconds.
int partial_overlaps(std::vector<Slice> slices)
{
  auto near = [](double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(a)); };
  std::sort(slices.begin(), slices.end(),
            [](const Slice& a, const Slice& b) { return a.start != b.start ? a.start < b.start : a.end > b.end; });
  std::vector<double> open;
  int bad = 0;
  for (const auto& s : slices) {
    while (!open.empty() && (open.back() <= s.start || near(open.back(), s.start)))
      open.pop_back();
    if (!open.empty() && s.end > open.back() && !near(s.end, open.back()))
      ++bad;
    open.push_back(s.end);
  }
  return bad;
}

TEST(TraceLanes, NestedAndFollowingSlicesStayOnTheirTrackPartlyOverlappingOnesMove)
{
  const std::vector<TraceEvent> events = {
      {0, 3, "a", 0, 10},   // lane 0
      {0, 3, "b", 2, 5},    // inside a: lane 0
      {0, 3, "c", 8, 12},   // starts inside a, ends after it: lane 1
      {0, 3, "d", 12, 14},  // after a and c: lane 0
      {1, 3, "e", 9, 11},   // another device: its own track, lane 0
      {0, 0, "f", 9, 11},   // another track of device 0: lane 0
      {0, 3, "g", 9, 13},   // overlaps a (lane 0) and c (lane 1) partly: lane 2
  };
  EXPECT_EQ(trace_lanes(events), (std::vector<int>{0, 0, 1, 0, 0, 0, 2}));
}

TEST(TraceLanes, WaferTraceHasNoPartlyOverlappingSlicesOnAnyTrack)
{
  auto spec = dtsim::scenario::load_scenario(dtsim::test::source_path("scenarios/wafer/gpt2-small-cs2.yaml"), {});
  auto report = dtsim::app::simulate(spec, true);
  ASSERT_TRUE(report.simulated);
  // The defect's precondition: the raw events do overlap partly on some track, else this test could not fail.
  std::map<std::pair<int64_t, int>, std::vector<Slice>> raw;
  for (const auto& e : report.replay.trace)
    raw[{e.device, e.track}].push_back({e.start, e.end});
  int raw_bad = 0;
  for (const auto& [track, slices] : raw)
    raw_bad += partial_overlaps(slices);
  EXPECT_GT(raw_bad, 0);

  std::ostringstream out;
  dtsim::report::write_trace(out, dtsim::report::make_record(report));
  const auto j = nlohmann::json::parse(out.str());
  std::map<std::pair<int64_t, int64_t>, std::vector<Slice>> lanes;
  std::map<std::pair<int64_t, int64_t>, bool> named;
  for (const auto& e : j.at("traceEvents")) {
    const std::pair<int64_t, int64_t> key{e.at("pid").get<int64_t>(), e.value("tid", int64_t(-1))};
    if (e.at("ph") == "X")
      lanes[key].push_back({e.at("ts").get<double>(), e.at("ts").get<double>() + e.at("dur").get<double>()});
    else if (e.at("name") == "thread_name")
      named[key] = true;
  }
  for (const auto& [lane, slices] : lanes) {
    EXPECT_EQ(partial_overlaps(slices), 0) << "device " << lane.first << " thread " << lane.second;
    EXPECT_TRUE(named.count(lane)) << "device " << lane.first << " thread " << lane.second << " has no name";
  }
}

}  // namespace
