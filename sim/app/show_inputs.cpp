#include "app/show_inputs.hpp"

#include <algorithm>
#include <map>
#include <ostream>
#include <set>

#include "config/key.hpp"
#include "core/diagnostics.hpp"
#include "hardware/hardware_keys.hpp"
#include "hardware/hardware_kind.hpp"
#include "hardware/hardware_record.hpp"
#include "hardware/hardware_yaml.hpp"
#include "stack/stack_keys.hpp"
#include "stack/stack_record.hpp"
#include "stack/stack_yaml.hpp"

namespace dtsim::app {

namespace {

using json = nlohmann::ordered_json;

// The dimension of each quantity key by its full path ("device.memory": bytes), from the keys' declarations, so
// that the table prints a quantity in the unit a file writes it in.
using Dimensions = std::map<std::string, config::Dimension>;

Dimensions quantity_dimensions(const std::vector<config::KeyGroup>& groups)
{
  Dimensions d;
  for (const auto& g : groups)
    for (const config::Key* k : g.keys)
      if (k->type == config::KeyType::Quantity)
        d[g.path.empty() ? k->name : g.path + "." + k->name] = k->dimension;
  return d;
}

// A leaf's value as the table shows it: a quantity with its unit to six significant digits, so that it reads back
// as the file gave it ("192 GiB", "2 us", "163.4 TFLOP/s"); anything else as JSON writes it.
std::string value_text(const json& v, const std::string& path, const Dimensions& dims)
{
  if (v.is_string())
    return v.get<std::string>();
  if (auto it = dims.find(path); it != dims.end() && v.is_number())
    return config::format_quantity(v.get<double>(), it->second, 6);
  return v.dump();
}

// One line per leaf, its key path padded to a column: what a person scans for one key. A value the file leaves to
// its default (its path not among `written`, the key paths the loader saw in the file) is marked so ("file" is the
// path given, no key).
void write_lines(std::ostream& out, const json& v, const std::string& path, const std::set<std::string>& written,
                 const Dimensions& dims)
{
  if (v.is_object()) {
    for (const auto& [k, child] : v.items())
      write_lines(out, child, path.empty() ? k : path + "." + k, written, dims);
    return;
  }
  constexpr size_t kKeyColumn = 36;
  std::string line = path;
  line.resize(std::max(kKeyColumn, path.size() + 1), ' ');
  const bool defaulted = path != "file" && written.count(path) == 0;
  out << line << value_text(v, path, dims) << (defaulted ? "  (default)" : "") << "\n";
}

// The record as JSON in SI units, or as lines with units marking the defaults; the file is read once, by its
// loader.
void write(std::ostream& out, const json& record, const std::set<std::string>& written, const Dimensions& dims,
           const std::string& format)
{
  if (format == "json") {
    out << record.dump(1) << "\n";
    return;
  }
  write_lines(out, record, "", written, dims);
}

}  // namespace

void show_stack(std::ostream& out, const std::string& path, const std::string& format)
{
  Diagnostics diag;
  const stack::StackSpec st = stack::load_stack(path, diag);
  diag.throw_if_any();
  write(out, stack::stack_record(st), st.written_keys, quantity_dimensions(stack::keys::groups()), format);
}

void show_hardware(std::ostream& out, const std::string& path, const std::string& format)
{
  Diagnostics diag;
  const hardware::HardwareSpec hw = hardware::load_hardware(path, diag);
  diag.throw_if_any();
  std::vector<config::KeyGroup> groups = hardware::keys::root_groups();
  if (const hardware::HardwareKind* kind = hardware::find_hardware_kind(hw.kind)) {
    const auto sections = kind->key_groups();
    groups.insert(groups.end(), sections.begin(), sections.end());
  }
  write(out, hardware::hardware_record(hw), hw.written_keys, quantity_dimensions(groups), format);
}

}  // namespace dtsim::app
