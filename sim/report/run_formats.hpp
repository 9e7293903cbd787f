#pragma once
/// The formats a run is written in, by name: the one place `--format` of `dtsim run` is looked up. Each writer reads
/// the run's record. Adding a format is one writer and one line in the list (run_formats.cpp); the command line
/// offers whatever the list holds.
#include <iosfwd>
#include <string>
#include <vector>

#include "report/run_record.hpp"

namespace dtsim::report {

struct RunFormat {
  const char* name;
  /// Writes the whole run to `out`.
  void (*write)(std::ostream& out, const RunRecord& record);
};

/// Every format, the default ("table") first.
const std::vector<RunFormat>& run_formats();
std::vector<std::string> run_format_names();

/// The format called `name`; throws std::invalid_argument naming the formats there are when there is none.
const RunFormat& run_format(const std::string& name);

}  // namespace dtsim::report
