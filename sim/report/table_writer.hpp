#pragma once
/// The table of a run for people (`dtsim run`, the default format): what the run is, its memory, its step, where
/// the time goes and the time to train, all read from the run's record.
#include <iosfwd>

#include "report/run_record.hpp"

namespace dtsim::report {

void write_table(std::ostream& out, const RunRecord& record);

}  // namespace dtsim::report
