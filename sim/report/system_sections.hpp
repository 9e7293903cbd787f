#pragma once
/// The parts of a run's record that differ between kinds of system: the rows saying where the model runs, the
/// memory section, the names of some breakdown terms, the system's own JSON section and the trace's names. Each kind
/// supplies one (sim/systems/*/report_sections.cpp) and sets it in the report it simulates, so that make_record
/// (run_record.cpp) records any kind without asking which it is.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "replay/replay.hpp"
#include "report/time_to_train.hpp"
#include "stack/interval.hpp"

namespace dtsim::report {

struct RunReport;

/// Gives one "key  value" row of the table.
using Row = std::function<void(const char* key, const std::string& value)>;

/// A term of the breakdown that only some kinds of system have: its label in the table, its key in the JSON
/// record, and the field of the breakdown that holds its seconds.
struct ExtraTerm {
  const char* label;
  const char* key;
  double replay::Breakdown::*seconds;
};

/// Called once per run, when its record is made (run_record.cpp): what they phrase travels on the record, and
/// the writers read only the record.
class SystemSections {
 public:
  virtual ~SystemSections() = default;
  /// Rows after "hardware": the devices or systems, then the parallel plan or the execution mode.
  virtual void placement_rows(const RunReport& r, const Row& row) const = 0;
  /// Keys of the JSON report's plan that only this kind has (its kernels' choices), after the common ones.
  virtual void plan_json(nlohmann::ordered_json& plan, const RunReport& r) const = 0;
  /// Rows after "training" (the software stack, where the system has one).
  virtual void software_rows(const RunReport& r, const Row& row) const = 0;
  /// The memory section: its heading, then its rows.
  virtual std::string memory_heading(const RunReport& r) const = 0;
  virtual void memory_rows(const RunReport& r, const Row& row) const = 0;
  /// The 90% interval of the measured step time of a run simulated at `step_s`; by default from the scenario's
  /// software stack (stack/interval.hpp).
  virtual stack::StepInterval step_interval(const RunReport& r, double step_s) const;
  /// Labels of the breakdown's tensor-parallel, pipeline and data-parallel terms; the tensor-parallel one is nullptr
  /// where the kind has no tensor parallelism (a wafer), so that the table leaves the term out.
  virtual const char* tp_label() const = 0;
  virtual const char* pp_label() const = 0;
  virtual const char* dp_label() const = 0;
  /// Breakdown terms of this kind of system only, after the common ones.
  virtual std::vector<ExtraTerm> extra_terms() const = 0;
  /// The system's own section of the JSON report, where it has one.
  virtual void json_section(nlohmann::ordered_json& j, const RunReport& r) const = 0;
  /// How the run was executed where this kind chooses among ways (a wafer's mode), "" where it does not.
  virtual std::string execution(const RunReport& r) const = 0;
  /// What a whole training run of this kind meets: failures, checkpoint writes, restarts (report/time_to_train.hpp).
  virtual FailureAssumptions failure_assumptions(const RunReport& r) const = 0;
  /// Trace: the name of track 0-3 and of the process of `device` (-1: the weight store).
  virtual const char* track_name(int track) const = 0;
  virtual std::string process_name(const RunReport& r, int64_t device) const = 0;
};

/// A step's breakdown as the JSON report writes it (stable keys; the system's own terms from `sections`).
nlohmann::ordered_json breakdown_json(const replay::Breakdown& b, const SystemSections& sections);

}  // namespace dtsim::report
