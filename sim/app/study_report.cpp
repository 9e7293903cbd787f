#include "app/study_report.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <regex>
#include <set>
#include <sstream>

#include "app/load.hpp"
#include "app/plot.hpp"
#include "core/diagnostics.hpp"
#include "core/version.hpp"
#include "scenario/scenario_spec.hpp"
#include "systems/system_kinds.hpp"

namespace dtsim::app {

namespace {

namespace fs = std::filesystem;

[[noreturn]] void refuse(const std::string& origin, const std::string& message)
{
  throw ConfigError({Diagnostic{Origin{origin, 0, 0}, "", message}});
}

std::optional<std::string> read_text_if_readable(const fs::path& p)
{
  std::error_code ec;
  if (!fs::is_regular_file(p, ec))  // a pipe or a device would hang the read or fill the memory
    return std::nullopt;
  std::ifstream in(p, std::ios::binary);
  if (!in)
    return std::nullopt;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const fs::path& p, const std::string& text)
{
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
  out.flush();
  if (!out)
    refuse("--out", "cannot write " + p.string());
}

std::string html_escape(const std::string& s)
{
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

// A Markdown table cell: one line, no pipe.
std::string md_cell(const std::string& s)
{
  std::string o;
  for (char c : s)
    o += c == '|' ? std::string("\\|") : c == '\n' || c == '\r' ? std::string(" ") : std::string(1, c);
  return o;
}

std::string number(const std::string& text, const char* format, double scale = 1)
{
  if (text.empty())
    return "";
  try {
    size_t used = 0;
    double v = std::stod(text, &used);
    if (used != text.size())
      return text;
    char b[64];
    std::snprintf(b, sizeof b, format, v * scale);
    return b;
  } catch (const std::exception&) {
    return text;
  }
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// "DGX H100" of "DGX H100, 8 x NDR 400 Gb/s per node, rail-optimized fat tree": a hardware name's first part.
std::string short_name(const std::string& s) { return first_line(s).substr(0, first_line(s).find(", ")); }

// "a", "a and b", "a, b and c"; past `most` names, "N <what>".
std::string name_list(const std::vector<std::string>& names, size_t most, const std::string& what)
{
  if (names.size() > most)
    return std::to_string(names.size()) + " " + what;
  std::string s;
  for (size_t i = 0; i < names.size(); ++i)
    s += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return s;
}

// A table of text cells, written both as Markdown and as HTML.
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;

  // Numbers are aligned right, text left: a column is text when a cell is neither empty nor a number ("57.6%").
  bool is_text(size_t c) const
  {
    for (const auto& r : rows) {
      if (c >= r.size() || r[c].empty())
        continue;
      std::string v = r[c].back() == '%' ? r[c].substr(0, r[c].size() - 1) : r[c];
      char* end = nullptr;
      std::strtod(v.c_str(), &end);
      if (end != v.c_str() + v.size())
        return true;
    }
    return false;
  }

  std::string markdown() const
  {
    std::string o = "|";
    for (const auto& h : header)
      o += " " + md_cell(h) + " |";
    o += "\n|";
    for (size_t c = 0; c < header.size(); ++c)
      o += is_text(c) ? "---|" : "--:|";
    o += "\n";
    for (const auto& r : rows) {
      o += "|";
      for (const auto& c : r)
        o += " " + md_cell(c) + " |";
      o += "\n";
    }
    return o;
  }

  std::string html() const
  {
    std::string o = "<table>\n<tr>";
    for (size_t c = 0; c < header.size(); ++c)
      o += (is_text(c) ? "<th class=\"l\">" : "<th>") + html_escape(header[c]) + "</th>";
    o += "</tr>\n";
    for (const auto& r : rows) {
      o += "<tr>";
      for (size_t c = 0; c < r.size(); ++c)
        o += (is_text(c) ? "<td class=\"l\">" : "<td>") + html_escape(r[c]) + "</td>";
      o += "</tr>\n";
    }
    return o + "</table>\n";
  }
};

// The results table: the varied inputs, the status and the main outputs of each row.
Table results_table(const CsvTable& t)
{
  std::map<std::string, int> col;
  for (size_t c = 0; c < t.columns.size(); ++c)
    col[t.columns[c]] = int(c);
  auto cell = [&](size_t r, const std::string& name) {
    auto it = col.find(name);
    return it == col.end() ? std::string() : t.rows[r][size_t(it->second)];
  };
  std::vector<std::string> varied;
  for (const auto& c : t.columns)
    if (c.rfind("vary.", 0) == 0)
      varied.push_back(c);
  // A varied model or hardware file is shown by the name in its row (its column of the same name), not its path.
  auto shown = [&](size_t r, const std::string& v) {
    const std::string key = v.substr(5);
    if ((key == "model" || key == "hardware") && col.count(key) && !cell(r, key).empty())
      return key == "hardware" ? short_name(cell(r, key)) : first_line(cell(r, key));
    return cell(r, v);
  };
  Table tab;
  for (const auto& v : varied)
    tab.header.push_back(v.substr(5));
  const bool days = col.count("time_to_train_s") > 0;  // the sweep's scenarios give training.tokens
  for (const char* h : {"status", "step time (s)", "samples/s", "MFU", "memory/device (GiB)"})
    tab.header.push_back(h);
  if (days)
    tab.header.push_back("days to train");
  tab.header.push_back("note");
  for (size_t r = 0; r < t.rows.size(); ++r) {
    std::vector<std::string> row;
    for (const auto& v : varied)
      row.push_back(shown(r, v));
    row.push_back(cell(r, "status"));
    row.push_back(number(cell(r, "step_time_s"), "%.4g"));
    row.push_back(number(cell(r, "samples_per_s"), "%.4g"));
    row.push_back(number(cell(r, "mfu"), "%.1f%%", 100));
    row.push_back(number(cell(r, "memory.peak_bytes_per_device"), "%.1f", 1.0 / 1073741824.0));
    // A simulated run that never finishes (its failures come faster than it recovers) has no time to train: the
    // cell says so, and the note why.
    const std::string why_not = cell(r, "time_to_train.why_not");
    if (days)
      row.push_back(why_not.empty() ? number(cell(r, "time_to_train_s"), "%.1f", 1.0 / 86400) : "never");
    row.push_back(first_line(why_not.empty() ? cell(r, "reason") : why_not));
    tab.rows.push_back(row);
  }
  return tab;
}

struct Input {
  std::string label, path, text;
};

// One scenario: its summary table and its input files (the scenario, the model and the hardware).
struct ScenarioInputs {
  std::string name;
  Table summary;
  std::vector<Input> files;
};

ScenarioInputs scenario_inputs(const std::string& path)
{
  const auto s = load_for_simulation(path, {});
  ScenarioInputs in;
  in.name = s.name;
  const auto& m = s.model;
  auto add = [&](const std::string& k, const std::string& v) { in.summary.rows.push_back({k, v}); };
  in.summary.header = {"input", "value"};
  add("model", m.name + ": " + std::to_string(m.layers) + " layers, hidden " + std::to_string(m.hidden) + ", " +
                   std::to_string(m.heads) + " heads, vocabulary " + std::to_string(m.vocab));
  systems::system_kind(s).input_rows(s, add);
  add("batch", "global " + std::to_string(s.training.global_batch) + ", micro " +
                   std::to_string(s.training.micro_batch) + ", sequence " + std::to_string(s.training.seq_len) +
                   ", " + s.training.precision + ", recomputation " + scenario::describe_recompute(s.training));
  for (const auto& [label, p] : {std::pair<std::string, std::string>{"scenario", path},
                                 {"model", m.file},
                                 {"hardware", s.hardware.file}}) {
    if (p.empty())
      continue;
    auto text = read_text_if_readable(p);
    in.files.push_back({label, p, text ? *text : "(cannot be read)"});
  }
  return in;
}

struct Chart {
  std::string name, title;  ///< files NAME.svg / NAME.png in the report's directory
  std::string svg;          ///< the SVG element, for the HTML
};

// Runs `dtsim plot` into the report's directory; nullopt (with the reason in `note`) when the chart cannot be drawn.
std::optional<Chart> draw(const ReportOptions& o, const fs::path& dir, const std::string& kind, const std::string& name,
                          const std::string& title, std::ostream& log, std::string& note, std::string* chosen = nullptr)
{
  PlotOptions po;
  po.csv = o.csv;
  po.kind = kind;
  po.out_prefix = (dir / name).string();
  po.title = title;
  std::ostringstream plot_log;
  const std::string which = kind == "auto" ? "chart" : kind + " chart";
  int rc = 0;
  try {
    rc = plot(po, plot_log);
  } catch (const ConfigError& e) {
    note = "no " + which + ": " + first_line(e.what());
    return std::nullopt;
  }
  const std::string text = plot_log.str();
  log << text;
  std::smatch m;
  if (chosen && std::regex_search(text, m, std::regex("plot: kind ([a-z]+)")))
    *chosen = m[1];
  auto svg = read_text_if_readable(dir / (name + ".svg"));
  if (rc != 0 || !svg) {
    note = "no " + which + ": gnuplot failed (see the messages on standard error)";
    return std::nullopt;
  }
  // Inline SVG in HTML takes the <svg> element alone, without the XML prolog and doctype.
  const size_t at = svg->find("<svg");
  return Chart{name, title, at == std::string::npos ? std::string() : svg->substr(at)};
}

const char* kStyle =
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
    "table{border-collapse:collapse;margin:1em 0;font-size:90%}"
    "th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f0f0f0}"
    "td.l,th.l{text-align:left}"
    "pre{background:#f6f6f6;padding:.6em;overflow-x:auto;font-size:85%}"
    "figure{margin:1em 0}svg{max-width:100%;height:auto}";

}  // namespace

int write_report(const ReportOptions& o, std::ostream& log)
{
  // 1. Everything that can be refused, before anything is written.
  auto csv_text = read_text_if_readable(o.csv);
  if (!csv_text)
    refuse(o.csv, "cannot read file: it does not exist or is not a readable file");
  const CsvTable t = parse_csv(*csv_text, o.csv);
  int status_col = -1;
  for (size_t c = 0; c < t.columns.size(); ++c)
    if (t.columns[c] == "status")
      status_col = int(c);
  size_t ok = 0, first_ok = 0;
  for (size_t r = 0; r < t.rows.size(); ++r)
    if (status_col < 0 || t.rows[r][size_t(status_col)] == "ok")
      if (ok++ == 0)
        first_ok = r;
  if (ok == 0)
    refuse(o.csv, t.rows.empty() ? "the file has a header and no rows: nothing to report"
                                 : "no row has status ok: nothing to report");
  std::vector<ScenarioInputs> inputs;
  for (const auto& s : o.scenarios)
    inputs.push_back(scenario_inputs(s));

  const fs::path dir = o.out_dir.empty() ? fs::path(o.csv).replace_extension("").string() + "-report" : o.out_dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir))
    refuse("--out " + dir.string(), "cannot create the directory");
  write_text(dir / "results.csv", *csv_text);

  auto cell = [&](const std::string& name) {
    for (size_t c = 0; c < t.columns.size(); ++c)
      if (t.columns[c] == name)
        return t.rows[first_ok][c];
    return std::string();
  };
  // The distinct values of a column over the simulated rows, in their first order.
  auto distinct = [&](const std::string& name, std::string (*shorten)(const std::string&)) {
    std::vector<std::string> values;
    for (size_t c = 0; c < t.columns.size(); ++c)
      if (t.columns[c] == name)
        for (size_t r = 0; r < t.rows.size(); ++r)
          if (status_col < 0 || t.rows[r][size_t(status_col)] == "ok") {
            const std::string v = shorten(t.rows[r][c]);
            if (!v.empty() && std::find(values.begin(), values.end(), v) == values.end())
              values.push_back(v);
          }
    return values;
  };
  std::string title = o.title;
  if (title.empty()) {
    const auto models = distinct("model", first_line), hardware = distinct("hardware", short_name);
    title = models.empty() ? "dtsim report: " + fs::path(o.csv).filename().string()
                           : "dtsim report: " + name_list(models, 3, "models") +
                                 (hardware.empty() ? "" : " on " + name_list(hardware, 3, "kinds of hardware"));
  }

  // 2. The charts: the one `dtsim plot` picks, then the breakdown and the memory per point.
  std::vector<Chart> charts;
  std::vector<std::string> notes;
  int rc = 0;
  std::string kind, note;
  if (auto c = draw(o, dir, "auto", "chart", "", log, note, &kind))
    charts.push_back(*c);
  else
    notes.push_back(note);
  for (const std::string k : {"breakdown", "memory"}) {
    if (k == kind)
      continue;
    if (auto c = draw(o, dir, k, k, "", log, note))
      charts.push_back(*c);
    else
      notes.push_back(note);
  }
  for (const auto& n : notes)
    if (n.find("gnuplot failed") != std::string::npos)
      rc = 1;

  // 3. The two documents.
  const Table results = results_table(t);
  std::string md, html;
  md += "# " + title + "\n\n";
  html += "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + html_escape(title) + "</title><style>" +
          kStyle + "</style></head><body>\n<h1>" + html_escape(title) + "</h1>\n";
  const std::string made = std::string("Made by dtsim ") + kVersion + " with:";
  md += made + "\n\n```sh\n" + o.command + "\n```\n\n";
  html += "<p>" + made + "</p>\n<pre>" + html_escape(o.command) + "</pre>\n";
  const std::string source = "Results: " + fs::path(o.csv).filename().string() + " (copied to results.csv), " +
                             std::to_string(t.rows.size()) + " rows, " + std::to_string(ok) + " simulated.";
  md += source + "\n\n";
  html += "<p>" + html_escape(source) + "</p>\n";

  md += "## Inputs\n\n";
  html += "<h2>Inputs</h2>\n";
  if (inputs.empty()) {
    // Every scenario the rows name (a sweep of several files has one each; it named only the first row's).
    std::vector<std::string> scenarios;
    for (const auto& name : distinct("scenario", first_line))
      scenarios.push_back("'" + name + "'");
    if (scenarios.empty())
      scenarios.push_back("'" + cell("scenario") + "'");
    const std::string none = std::string("No scenario file was given (--scenario); the results name the ") +
                             (scenarios.size() == 1 ? "scenario " : "scenarios ") +
                             name_list(scenarios, 6, "scenarios") + ".";
    md += none + "\n\n";
    html += "<p>" + html_escape(none) + "</p>\n";
  }
  if (!inputs.empty()) {
    const std::string how = "Each row of the results is the scenario with its varied keys set as in its row.";
    md += how + "\n\n";
    html += "<p>" + html_escape(how) + "</p>\n";
  }
  for (const auto& in : inputs) {
    md += "### " + in.name + "\n\n" + in.summary.markdown() + "\n";
    html += "<h3>" + html_escape(in.name) + "</h3>\n" + in.summary.html();
    for (const auto& f : in.files) {
      md += "`" + f.path + "` (" + f.label + "):\n\n```yaml\n" + f.text +
            (f.text.empty() || f.text.back() == '\n' ? "" : "\n") + "```\n\n";
      html += "<details><summary>" + html_escape(f.label + ": " + f.path) + "</summary><pre>" + html_escape(f.text) +
              "</pre></details>\n";
    }
  }

  md += "## Results\n\n" + results.markdown() + "\n";
  html += "<h2>Results</h2>\n" + results.html();

  md += "## Charts\n\n";
  html += "<h2>Charts</h2>\n";
  for (const auto& c : charts) {
    md += "![" + c.name + "](" + c.name + ".png)\n\n(SVG: [" + c.name + ".svg](" + c.name + ".svg))\n\n";
    html += "<figure>\n" + c.svg + "\n</figure>\n";
  }
  for (const auto& n : notes) {
    md += "- " + n + "\n";
    html += "<p>" + html_escape(n) + "</p>\n";
  }
  html += "</body></html>\n";
  write_text(dir / "report.md", md);
  write_text(dir / "report.html", html);
  log << "report: " << (dir / "report.md").string() << " and " << (dir / "report.html").string() << " ("
      << charts.size() << " chart" << (charts.size() == 1 ? "" : "s") << ")\n";
  return rc;
}

}  // namespace dtsim::app
