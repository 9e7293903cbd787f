#pragma once
/// One run's complete result as data, made once from a RunReport: every writer of a run (the table, JSON, a sweep's
/// CSV and JSONL rows, the Chrome trace) and the parents of child processes (compare, search) read it, so that no
/// writer recomputes a figure and no output is printed and parsed again. Child processes send it as CBOR (binary
/// JSON: numbers travel exactly, keys keep their order).
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "replay/replay.hpp"
#include "report/run_report.hpp"

namespace dtsim::report {

/// One "key  value" row of the table, phrased for people.
struct TableRow {
  std::string key, value;
  bool operator==(const TableRow& o) const { return key == o.key && value == o.value; }
};

/// A term of "where the time goes": its label in the table and its key in the document's breakdown.
struct BreakdownTerm {
  std::string label, key;
  bool operator==(const BreakdownTerm& o) const { return label == o.label && key == o.key; }
};

/// What the table prints beside the document's figures: the rows the run's kind of system phrases (its
/// SystemSections) and the terms of the breakdown it shows, in order.
struct RunTable {
  std::vector<TableRow> placement;  ///< after "hardware": the devices or systems, the plan or the execution mode
  std::string recompute;            ///< the recomputation in words, "selective (first 2 layers per chunk)"
  std::vector<TableRow> software;   ///< after "training": the software stack and its kernels, where there is one
  std::string memory_heading;       ///< "Memory per device (peak on stage 3)"
  std::vector<TableRow> memory;
  std::vector<BreakdownTerm> breakdown;  ///< empty when nothing was simulated
  bool operator==(const RunTable& o) const
  {
    return placement == o.placement && recompute == o.recompute && software == o.software &&
           memory_heading == o.memory_heading && memory == o.memory && breakdown == o.breakdown;
  }
};

/// The timeline of a run that was asked for one, with the kind's names of its tracks and processes.
struct RunTrace {
  std::vector<replay::TraceEvent> events;   ///< empty unless the run recorded a trace
  std::array<std::string, 4> tracks;        ///< track 0-3's name (compute, then the kind's three)
  std::map<int64_t, std::string> processes;  ///< the name of every device that has events
};

struct RunRecord {
  /// The run under stable keys, as `dtsim run --format json` prints it (the kind's own keys from its sections).
  nlohmann::ordered_json document;
  /// How the kind executed the run where it chooses among ways (a wafer's mode), "" where it does not.
  std::string execution;
  RunTable table;
  RunTrace trace;
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
