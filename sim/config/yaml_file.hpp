#pragma once
/// A YAML (or JSON) input file, loaded once, that remembers its path so that every later message can point at
/// "file:line:col". Relative paths written inside the file are resolved against the file's own folder.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>
#include <yaml-cpp/yaml.h>

#include "core/diagnostics.hpp"

namespace dtsim::config {

/// An override list holds "KEY=VALUE" entries (--set) and unset entries (--unset KEY), which remove a key the file
/// gives. An unset travels in the same list as "--unset KEY", so that every command that passes --set along (to
/// child processes, to the model and hardware loaders) passes --unset along with it, in order.
std::string unset_entry(const std::string& key);
/// The key of an unset entry, or nullopt for a KEY=VALUE entry.
std::optional<std::string> unset_key(const std::string& entry);

class YamlFile {
 public:
  /// Loads `path`; a missing file or malformed YAML is recorded in `diag` and leaves root() null.
  static YamlFile load(const std::string& path, Diagnostics& diag);

  const std::string& path() const { return path_; }
  const YAML::Node& root() const { return root_; }
  YAML::Node& root() { return root_; }
  bool ok() const { return root_.IsDefined() && !root_.IsNull(); }

  /// The dotted path of every key of the document's maps, at every level ("network", "network.nic",
  /// "network.nic.bandwidth"); keys inside lists are not listed.
  std::set<std::string> key_paths() const;

  /// Absolute paths are kept; relative ones are taken relative to this file's folder.
  std::string resolve(const std::string& relative) const;

  /// Whether the value at `key_path` was set on the command line (--set) rather than written in the file.
  bool from_command_line(const std::string& key_path) const { return overrides_.count(key_path) > 0; }

  /// Where a node sits in the file; values set on the command line say so instead.
  Origin origin(const YAML::Node& node, const std::string& key_path) const;

  /// Sets `dotted.key` = `value` (parsed as YAML) in the tree, creating maps on the way; remembers that the value
  /// came from the command line so that messages about it say so. Returns an error text, empty on success.
  std::string set_override(const std::string& dotted_key, const std::string& value);

  /// Removes `dotted.key` from the tree (--unset). Returns an error text naming the key when the file does not give
  /// it (with the closest key it does give), empty on success.
  std::string unset_override(const std::string& dotted_key);

  /// Applies every "KEY=VALUE" of `sets` with set_override and every unset entry with unset_override, in order; each
  /// error is recorded in `diag` at "<command line> --set PREFIX KEY=VALUE" (or "--unset PREFIX KEY"). `prefix` is how
  /// the user named this file's keys ("hardware." for the hardware file a scenario names, "" for the scenario itself),
  /// so that messages quote the --set as written.
  void apply_overrides(const std::vector<std::string>& sets, const std::string& prefix, Diagnostics& diag);

 private:
  std::string path_;
  std::string dir_;
  YAML::Node root_;
  std::map<std::string, std::string> overrides_;  // key path -> the --set text
  std::string override_prefix_;                   // what the user wrote before this file's keys
};

}  // namespace dtsim::config
