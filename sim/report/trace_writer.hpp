#pragma once
/// The Chrome trace-event JSON of a run (`dtsim run --trace FILE`, opens in Perfetto), read from the run's record:
/// one process per simulated device, threads for compute and the three kinds of communication, each split into
/// lanes where its slices partly overlap (see trace_lanes).
#include <iosfwd>
#include <vector>

#include "replay/replay.hpp"
#include "report/run_record.hpp"

namespace dtsim::report {

void write_trace(std::ostream& out, const RunRecord& record);

/// The lane of each event within its device's track, so that on every lane the slices nest or follow each other
/// (Perfetto mis-draws slices that partly overlap): 0 for every event that already does, 1, 2... for the others.
std::vector<int> trace_lanes(const std::vector<replay::TraceEvent>& events);

}  // namespace dtsim::report
