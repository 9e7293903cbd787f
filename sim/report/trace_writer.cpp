#include "report/trace_writer.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <ostream>

#include <nlohmann/json.hpp>

#include "core/format_number.hpp"

namespace dtsim::report {

using json = nlohmann::ordered_json;

// Perfetto draws the slices of one track as a stack: each must lie inside the one below it or after it. Slices that
// partly overlap (gradient sets of several units on their way out, optimizer updates sharing MemoryX) are put on
// extra lanes of their track. Returns each event's lane, 0 for every event that nests or follows on its own track.
std::vector<int> trace_lanes(const std::vector<replay::TraceEvent>& events)
{
  std::vector<size_t> order(events.size());
  std::iota(order.begin(), order.end(), size_t(0));
  // By track, then by start, the longer first, so that an enclosing slice comes before those inside it.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto &x = events[a], &y = events[b];
    if (x.device != y.device || x.track != y.track)
      return x.device != y.device ? x.device < y.device : x.track < y.track;
    return x.start != y.start ? x.start < y.start : x.end > y.end;
  });
  std::vector<int> lane(events.size(), 0);
  std::vector<std::vector<double>> open;  // per lane, the ends of the slices still open, innermost last
  for (size_t k = 0; k < order.size(); ++k) {
    const replay::TraceEvent& e = events[order[k]];
    if (k == 0 || e.device != events[order[k - 1]].device || e.track != events[order[k - 1]].track)
      open.clear();
    size_t l = 0;
    for (; l < open.size(); ++l) {
      auto& ends = open[l];
      while (!ends.empty() && ends.back() <= e.start)
        ends.pop_back();
      if (ends.empty() || e.end <= ends.back())
        break;
    }
    if (l == open.size())
      open.emplace_back();
    open[l].push_back(e.end);
    lane[order[k]] = int(l);
  }
  return lane;
}

void write_trace(std::ostream& out, const RunRecord& record)
{
  const auto& trace = record.trace.events;
  const auto& tracks = record.trace.tracks;
  // Lane l of track t is thread 4 * l + t: the four tracks keep their numbers, extra lanes come after them.
  const std::vector<int> lanes = trace_lanes(trace);
  std::map<int64_t, std::array<int, 4>> lanes_of;  // per device, the lanes of each track
  for (size_t i = 0; i < trace.size(); ++i) {
    auto& n = lanes_of[trace[i].device];  // value-initialised: {0, 0, 0, 0}
    n[size_t(trace[i].track)] = std::max(n[size_t(trace[i].track)], lanes[i] + 1);
  }
  json events = json::array();
  for (const auto& [d, n] : lanes_of) {
    events.push_back(
        {{"name", "process_name"}, {"ph", "M"}, {"pid", d}, {"args", {{"name", record.trace.processes.at(d)}}}});
    for (int t = 0; t < 4; ++t)
      events.push_back(
          {{"name", "thread_name"}, {"ph", "M"}, {"pid", d}, {"tid", t}, {"args", {{"name", tracks[size_t(t)]}}}});
    for (int t = 0; t < 4; ++t)
      for (int l = 1; l < n[size_t(t)]; ++l)
        events.push_back({{"name", "thread_name"},
                          {"ph", "M"},
                          {"pid", d},
                          {"tid", 4 * l + t},
                          {"args", {{"name", tracks[size_t(t)] + " (" + std::to_string(l + 1) + ")"}}}});
  }
  for (size_t i = 0; i < trace.size(); ++i) {
    const auto& e = trace[i];
    events.push_back({{"name", e.name},
                      {"cat", tracks[size_t(e.track)]},
                      {"ph", "X"},
                      {"ts", e.start * 1e6},
                      {"dur", (e.end - e.start) * 1e6},
                      {"pid", e.device},
                      {"tid", 4 * lanes[i] + e.track}});
  }
  json document = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  // A sampled run traces its first sample: say which step the timeline is (Perfetto shows otherData as metadata).
  if (record.document.contains("trace_sample")) {
    const json& t = record.document.at("trace_sample");
    document["otherData"] = {{"dtsim_traced_step", "sample " + t.at("sample").dump() + " of " + t.at("samples").dump() +
                                                     " (seed " + t.at("seed").dump() + "), step " +
                                                     format_number("%.6g s", t.at("step_time_s").get<double>()) +
                                                     "; the run's step_time_s is the mean of the samples"}};
  }
  out << document.dump() << "\n";
}

}  // namespace dtsim::report
