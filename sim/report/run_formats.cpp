#include "report/run_formats.hpp"

#include <ostream>
#include <stdexcept>

#include "report/table_writer.hpp"

namespace dtsim::report {

namespace {

// Stable keys for programs: the record's document as it is.
void write_json(std::ostream& out, const RunRecord& record) { out << record.document.dump(2) << "\n"; }

}  // namespace

const std::vector<RunFormat>& run_formats()
{
  static const std::vector<RunFormat> formats{{"table", write_table}, {"json", write_json}};
  return formats;
}

std::vector<std::string> run_format_names()
{
  std::vector<std::string> names;
  for (const auto& f : run_formats())
    names.push_back(f.name);
  return names;
}

const RunFormat& run_format(const std::string& name)
{
  std::string known;
  for (const auto& f : run_formats()) {
    if (name == f.name)
      return f;
    known += (known.empty() ? "" : ", ") + std::string(f.name);
  }
  throw std::invalid_argument("unknown format '" + name + "' (formats: " + known + ")");
}

}  // namespace dtsim::report
