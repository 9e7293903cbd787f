#include "app/derived_inputs.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include <yaml-cpp/yaml.h>

#include "app/load.hpp"
#include "config/yaml_file.hpp"
#include "core/diagnostics.hpp"

namespace dtsim::app {

namespace {

namespace fs = std::filesystem;

// Temporary directories of the copies, removed however load_with_file_keys returns.
struct TempDirs {
  std::vector<fs::path> dirs;
  ~TempDirs()
  {
    std::error_code ec;
    for (const auto& d : dirs)
      fs::remove_all(d, ec);
  }
  fs::path make()
  {
    std::string t = (fs::temp_directory_path() / "dtsim-inputs-XXXXXX").string();
    if (!mkdtemp(t.data()))
      throw std::runtime_error("cannot create a temporary directory for a copy of an input file");
    dirs.push_back(t);
    return dirs.back();
  }
};

void replace_all(std::string& s, const std::string& from, const std::string& to)
{
  for (size_t at = s.find(from); !from.empty() && at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

}  // namespace

bool is_file_key(const std::string& key) { return key.rfind("hardware.", 0) == 0 || key.rfind("model.", 0) == 0; }

scenario::ScenarioSpec load_with_file_keys(const std::string& scenario, const std::vector<std::string>& overrides)
{
  std::vector<std::string> plain;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> by_file;  // "model"/"hardware" -> key, value
  for (const auto& o : overrides) {
    const auto eq = o.find('=');
    const std::string key = o.substr(0, eq);
    if (eq == std::string::npos || !is_file_key(key)) {
      plain.push_back(o);
      continue;
    }
    const auto dot = key.find('.');
    by_file[key.substr(0, dot)].push_back({key.substr(dot + 1), o.substr(eq + 1)});
  }
  if (by_file.empty())
    return load_for_simulation(scenario, plain);

  // The files the scenario names (with its own overrides, which may name other files).
  const auto base = load_for_simulation(scenario, plain);
  TempDirs temp;
  std::map<std::string, std::string> copy_to_original;
  auto overrides_with_copies = plain;
  for (const auto& [which, keys] : by_file) {
    const std::string original = which == "model" ? base.model.file : base.hardware.file;
    Diagnostics diag;
    auto file = config::YamlFile::load(original, diag);
    diag.throw_if_any();
    for (const auto& [key, value] : keys) {
      std::string err = file.set_override(key, value);
      if (!err.empty())
        throw ConfigError({Diagnostic{Origin{original, 0, 0}, key, err + " (set as " + which + "." + key + ")"}});
    }
    // The copy lives elsewhere: a path the file names relative to itself (its default stack) must still find it.
    if (which == "hardware" && !base.hardware.default_stack.empty() && file.root()["default_stack"])
      file.root()["default_stack"] = fs::absolute(base.hardware.default_stack).lexically_normal().string();
    const fs::path copy = temp.make() / fs::path(original).filename();
    YAML::Emitter text;
    text << file.root();
    std::ofstream(copy) << text.c_str() << "\n";
    copy_to_original[copy.string()] = original;
    overrides_with_copies.push_back(which + "=" + copy.string());
  }
  try {
    auto spec = load_for_simulation(scenario, overrides_with_copies);
    for (auto* f : {&spec.model.file, &spec.hardware.file})
      if (copy_to_original.count(*f))
        *f = copy_to_original[*f];
    return spec;
  } catch (const ConfigError& e) {
    // Name the original files, not the copies that are about to disappear.
    std::vector<Diagnostic> items = e.items();
    for (auto& d : items)
      for (const auto& [copy, original] : copy_to_original) {
        if (d.where.file == copy)  // lines and columns of the copy are not those of the original
          d.where = Origin{original + " (with the values set by the sweep)", 0, 0};
        replace_all(d.message, copy, original);
      }
    throw ConfigError(items);
  }
}

}  // namespace dtsim::app
