#include "app/calibration_runs.hpp"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "app/plot.hpp"
#include "config/input_file.hpp"

namespace dtsim::app {

namespace {

std::vector<std::string> split_words(const std::string& s)
{
  std::istringstream in(s);
  std::vector<std::string> words;
  for (std::string w; in >> w;)
    words.push_back(w);
  return words;
}

}  // namespace

std::vector<CalibrationRun> read_calibration_runs(const std::string& path, const std::string& stack_override)
{
  std::string text;
  if (std::string problem = config::read_input_file(path, text); !problem.empty())
    throw_config_error({path, 0, 0}, "", problem);  // a pipe or a device is refused before it is opened
  std::istringstream lines(text);
  std::string cleaned;
  for (std::string line; std::getline(lines, line);)
    cleaned += (line.rfind('#', 0) == 0 ? std::string() : line) + "\n";
  CsvTable t = parse_csv(cleaned, path);
  int col_scenario = -1, col_measured = -1, col_set = -1, col_label = -1;
  for (size_t c = 0; c < t.columns.size(); ++c) {
    const std::string& name = t.columns[c];
    int* slot = name == "scenario" ? &col_scenario : name == "measured_step_time_s" ? &col_measured
                : name == "set"    ? &col_set      : name == "label"                ? &col_label : nullptr;
    if (!slot)
      throw_config_error({path, 0, 0}, name,
                         "unknown column '" + name + "'; expected scenario, measured_step_time_s, set, label");
    *slot = int(c);
  }
  if (col_scenario < 0 || col_measured < 0)
    throw_config_error({path, 0, 0}, col_scenario < 0 ? "scenario" : "measured_step_time_s",
                       "expected the columns scenario and measured_step_time_s in the header row");
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::vector<CalibrationRun> runs;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const auto& row = t.rows[r];
    CalibrationRun run;
    run.where = {path, r < t.lines.size() ? t.lines[r] : 0, 0};
    const std::string& sc = row[size_t(col_scenario)];
    if (sc.empty())
      throw_config_error(run.where, "scenario", "expected a scenario path, got an empty field");
    run.scenario =
        (std::filesystem::path(sc).is_absolute() ? std::filesystem::path(sc) : dir / sc).lexically_normal().string();
    const std::string& m = row[size_t(col_measured)];
    char* end = nullptr;
    run.measured_s = std::strtod(m.c_str(), &end);
    if (m.empty() || *end != '\0' || !std::isfinite(run.measured_s) || run.measured_s <= 0)
      throw_config_error(run.where, "measured_step_time_s", "expected a positive number of seconds, got '" + m + "'");
    const std::string set = col_set >= 0 ? row[size_t(col_set)] : "";
    run.sets = split_words(set);
    if (!stack_override.empty())
      run.sets.push_back("stack=" + stack_override);
    run.label = col_label >= 0 && !row[size_t(col_label)].empty()
                    ? row[size_t(col_label)]
                    : std::filesystem::path(sc).stem().string() + (set.empty() ? "" : " " + set);
    runs.push_back(std::move(run));
  }
  if (runs.empty())
    throw_config_error({path, 0, 0}, "", "expected at least one run below the header row");
  return runs;
}

}  // namespace dtsim::app
