#include "app/show_inputs.hpp"

#include <algorithm>
#include <ostream>

#include "config/yaml_file.hpp"
#include "core/diagnostics.hpp"
#include "hardware/hardware_record.hpp"
#include "hardware/hardware_yaml.hpp"
#include "stack/stack_record.hpp"
#include "stack/stack_yaml.hpp"

namespace dtsim::app {

namespace {

using json = nlohmann::ordered_json;

// Whether the file writes the key at the dotted `path` ("factors.compute"): the record's paths are the file's.
bool written_in_file(const YAML::Node& node, const std::string& path)
{
  const size_t dot = path.find('.');
  const std::string key = path.substr(0, dot);
  if (!node.IsMap() || !node[key])
    return false;
  return dot == std::string::npos || written_in_file(node[key], path.substr(dot + 1));
}

// One line per leaf, its key path padded to a column: what a person scans for one key. A value the file leaves to
// its default is marked so ("file" is the path given, no key).
void write_lines(std::ostream& out, const json& v, const std::string& path, const YAML::Node& file)
{
  if (v.is_object()) {
    for (const auto& [k, child] : v.items())
      write_lines(out, child, path.empty() ? k : path + "." + k, file);
    return;
  }
  constexpr size_t kKeyColumn = 36;
  std::string line = path;
  line.resize(std::max(kKeyColumn, path.size() + 1), ' ');
  const bool defaulted = path != "file" && !written_in_file(file, path);
  out << line << (v.is_string() ? v.get<std::string>() : v.dump()) << (defaulted ? "  (default)" : "") << "\n";
}

void write(std::ostream& out, const json& record, const std::string& path, const std::string& format)
{
  if (format == "json") {
    out << record.dump(1) << "\n";
    return;
  }
  Diagnostics diag;
  const config::YamlFile file = config::YamlFile::load(path, diag);
  diag.throw_if_any();
  write_lines(out, record, "", file.root());
}

}  // namespace

void show_stack(std::ostream& out, const std::string& path, const std::string& format)
{
  Diagnostics diag;
  const stack::StackSpec st = stack::load_stack(path, diag);
  diag.throw_if_any();
  write(out, stack::stack_record(st), path, format);
}

void show_hardware(std::ostream& out, const std::string& path, const std::string& format)
{
  Diagnostics diag;
  const hardware::HardwareSpec hw = hardware::load_hardware(path, diag);
  diag.throw_if_any();
  write(out, hardware::hardware_record(hw), path, format);
}

}  // namespace dtsim::app
