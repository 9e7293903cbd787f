#include "app/show_inputs.hpp"

#include <algorithm>
#include <ostream>
#include <set>

#include "core/diagnostics.hpp"
#include "hardware/hardware_record.hpp"
#include "hardware/hardware_yaml.hpp"
#include "stack/stack_record.hpp"
#include "stack/stack_yaml.hpp"

namespace dtsim::app {

namespace {

using json = nlohmann::ordered_json;

// One line per leaf, its key path padded to a column: what a person scans for one key. A value the file leaves to
// its default (its path not among `written`, the key paths the loader saw in the file) is marked so ("file" is the
// path given, no key).
void write_lines(std::ostream& out, const json& v, const std::string& path, const std::set<std::string>& written)
{
  if (v.is_object()) {
    for (const auto& [k, child] : v.items())
      write_lines(out, child, path.empty() ? k : path + "." + k, written);
    return;
  }
  constexpr size_t kKeyColumn = 36;
  std::string line = path;
  line.resize(std::max(kKeyColumn, path.size() + 1), ' ');
  const bool defaulted = path != "file" && written.count(path) == 0;
  out << line << (v.is_string() ? v.get<std::string>() : v.dump()) << (defaulted ? "  (default)" : "") << "\n";
}

// The record as JSON, or as lines marking the defaults; the file is read once, by its loader.
void write(std::ostream& out, const json& record, const std::set<std::string>& written, const std::string& format)
{
  if (format == "json") {
    out << record.dump(1) << "\n";
    return;
  }
  write_lines(out, record, "", written);
}

}  // namespace

void show_stack(std::ostream& out, const std::string& path, const std::string& format)
{
  Diagnostics diag;
  const stack::StackSpec st = stack::load_stack(path, diag);
  diag.throw_if_any();
  write(out, stack::stack_record(st), st.written_keys, format);
}

void show_hardware(std::ostream& out, const std::string& path, const std::string& format)
{
  Diagnostics diag;
  const hardware::HardwareSpec hw = hardware::load_hardware(path, diag);
  diag.throw_if_any();
  write(out, hardware::hardware_record(hw), hw.written_keys, format);
}

}  // namespace dtsim::app
