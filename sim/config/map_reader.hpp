#pragma once
/// Typed, checked access to one YAML mapping. Every read records its own error (file, line, column, key path,
/// expected, found) in a shared Diagnostics instead of throwing, so that a file is checked in one pass.
/// finish() then reports every key that no read asked for, with a "did you mean" suggestion.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config/key.hpp"
#include "config/limits.hpp"
#include "config/units.hpp"
#include "config/yaml_file.hpp"

namespace dtsim::config {

class MapReader {
 public:
  /// `path` is the key path of this mapping from the document root ("" for the root itself).
  MapReader(const YamlFile& file, YAML::Node node, std::string path, Diagnostics& diag);

  bool valid() const { return valid_; }
  bool has(const std::string& key) const;

  /// Integer within `range` (config/limits.hpp), never truncated. Absent and not required: nullopt, no error.
  std::optional<int64_t> integer(const std::string& key, bool required, IntRange range);
  /// A sequence of integers, each within `range`. Absent and not required: nullopt, no error.
  std::optional<std::vector<int64_t>> integer_list(const std::string& key, bool required, IntRange range);
  /// A sequence of numbers, each in [lo, hi]. Absent and not required: nullopt, no error.
  std::optional<std::vector<double>> number_list(const std::string& key, bool required, double lo, double hi);
  /// Quantity with a mandatory unit, finite and within `range` (config/limits.hpp).
  std::optional<double> quantity(const std::string& key, Dimension d, bool required, QuantityRange range);
  /// Dimensionless number in [lo, hi].
  std::optional<double> number(const std::string& key, bool required, double lo, double hi);
  std::optional<std::string> string(const std::string& key, bool required);
  /// One of `allowed` (with "did you mean").
  std::optional<std::string> choice(const std::string& key, const std::vector<std::string>& allowed, bool required);
  std::optional<bool> boolean(const std::string& key, bool required);
  /// A nested mapping (invalid reader when absent or not a mapping; the error is recorded when required).
  MapReader map(const std::string& key, bool required);

  /// The same reads through a key's declaration (config/key.hpp): its name, presence and limits. A declaration of
  /// another type is a programming error (std::logic_error).
  std::optional<int64_t> integer(const Key& k);
  std::optional<double> quantity(const Key& k);
  std::optional<double> number(const Key& k);
  std::optional<std::string> string(const Key& k);
  /// Absent: the key's default choice, if it has one.
  std::optional<std::string> choice(const Key& k);
  std::optional<std::vector<double>> number_list(const Key& k);
  std::optional<std::vector<int64_t>> integer_list(const Key& k);
  std::optional<bool> boolean(const Key& k);
  MapReader map(const Key& k);
  /// A numeric key's value: what the file gives, else its default (0 when it has none, or after an error).
  double value(const Key& k);

  /// Marks keys as known without reading them (accepted and ignored).
  void accept(const std::vector<std::string>& keys);
  /// Reports unknown keys. Call once, after every read.
  void finish();
  /// The keys of this mapping that no read asked for and no accept() named (for files whose other keys are
  /// allowed, such as a Hugging Face config.json).
  std::vector<std::string> unread_keys() const;

  Origin where(const std::string& key) const;  ///< the value's position, or this map's when the key is absent
  Origin where_self() const;
  std::string path_of(const std::string& key) const;
  Diagnostics& diag() { return *diag_; }
  const YamlFile& file() const { return *file_; }
  void error(const std::string& key, const std::string& message);

 private:
  /// The key's node, marked as known; nullopt (an error when required) when absent or this map is invalid.
  std::optional<YAML::Node> lookup(const std::string& key, bool required, const std::string& expected);
  std::optional<YAML::Node> scalar(const std::string& key, bool required, const std::string& expected);
  void missing(const std::string& key, const std::string& expected);

  const YamlFile* file_;
  YAML::Node node_;
  std::string path_;
  Diagnostics* diag_;
  bool valid_ = false;
  std::vector<std::string> known_;
};

}  // namespace dtsim::config
