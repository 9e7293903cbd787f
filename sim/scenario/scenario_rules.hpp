#pragma once
/// The rules a kind of system sets on the scenarios that run on it, among the loader's cross-file checks: each wing
/// under sim/systems/ implements them and systems::install() registers them under the kind's name, so that the
/// scenario loader checks every kind without knowing any.
#include <functional>
#include <string>
#include <vector>

#include "core/diagnostics.hpp"
#include "scenario/scenario_spec.hpp"

namespace dtsim::scenario {

/// Where a scenario's key was written (its file, line and column; the file's when not written).
using KeyOrigin = std::function<Origin(const std::string& key)>;

/// How a scenario gave its micro batch.
struct MicroBatchGiven {
  bool given = false;  ///< training.micro_batch is written
  bool is_auto = false;  ///< as `auto`
  Origin where;  ///< its value's place, or the training section's when not written
  bool section_read = false;  ///< the training section was read (else its absence is reported already)
  bool recompute_given = false;  ///< training.recompute is written (a compiler may choose it with the micro batch)
  Origin recompute_where;  ///< its value's place, or the training section's when not written
};

/// A scenario key that a kind of system accepts and does not read, and why (the loader warns where a scenario
/// gives it: scenario/keys_without_effect.hpp).
struct UnreadKey {
  std::string key;  ///< dotted, as the scenario writes it ("training.flash_attention")
  std::string why;
};

class ScenarioRules {
 public:
  virtual ~ScenarioRules() = default;
  /// The kind's checks of the scenario's plan (the hardware loaded).
  virtual void check_plan(const ScenarioSpec& s, const KeyOrigin& at, Diagnostics& diag) const = 0;
  /// Why the scenario may not run under a software stack on this kind, or "" when it may.
  virtual std::string why_no_stack(const ScenarioSpec& s) const = 0;
  /// Takes the micro batch as the scenario gave it: sets s.training.micro_batch_auto where the kind's compiler
  /// chooses it, or reports what the kind needs.
  virtual void take_micro_batch(ScenarioSpec& s, const MicroBatchGiven& given, Diagnostics& diag) const = 0;
  /// Whether the kind's framework pads the vocabulary to a multiple of 128 * tp (Megatron-LM's
  /// _vocab_size_with_padding), which the logits GEMM and the loss then run on.
  virtual bool pads_vocabulary() const = 0;
  /// The scenario keys this kind accepts (so that sweeps and fragments shared with other kinds keep working) but
  /// does not read: whatever their value, the simulation is the same.
  virtual std::vector<UnreadKey> unread_keys(const ScenarioSpec& s) const = 0;
};

/// Registers `rules` under the kind `name` (systems::install does, once per process).
void register_scenario_rules(const std::string& name, const ScenarioRules& rules);

/// The rules of the scenario's hardware kind. Throws std::logic_error when none are registered under it.
const ScenarioRules& scenario_rules(const ScenarioSpec& s);

}  // namespace dtsim::scenario
