#pragma once
/// One run's complete result as data, made once from a RunReport: the JSON writer, the rows of a sweep and the
/// parents of child processes (compare, search) read it, so that no output is printed and parsed again. Child
/// processes send it as CBOR (binary JSON: numbers travel exactly, keys keep their order).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/run_report.hpp"

namespace dtsim::report {

struct RunRecord {
  /// The run under stable keys, as `dtsim run --format json` prints it (the kind's own keys from its sections).
  nlohmann::ordered_json document;
  /// How the kind executed the run where it chooses among ways (a wafer's mode), "" where it does not.
  std::string execution;
};

/// The keys a scenario's JSON output opens with (a run's record, a search's ranking): dtsim's version, the scenario,
/// its model, hardware and devices.
nlohmann::ordered_json scenario_identity_json(const scenario::ScenarioSpec& s);

/// The record of a run: the one place a report becomes data.
RunRecord make_record(const RunReport& r);

/// The record as CBOR, the form a child process sends it in, and back (throws on bytes that are not a record).
std::vector<uint8_t> record_to_cbor(const RunRecord& record);
RunRecord record_from_cbor(const std::vector<uint8_t>& bytes);

}  // namespace dtsim::report
