#include "app/plot.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "config/suggest.hpp"
#include "config/text.hpp"
#include "config/units.hpp"
#include "core/diagnostics.hpp"
#include "core/format_number.hpp"

namespace dtsim::app {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void refuse(const std::string& file, int line, const std::string& key, const std::string& message)
{
  Diagnostics d;
  d.add(Origin{file, line, 0}, key, message);
  d.throw_if_any();
  throw InternalError("plot: refuse without a diagnostic");
}

std::string trim(const std::string& s)
{
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

using config::ends_with;
using config::starts_with;

/// A whole cell as a finite number, or nothing.
std::optional<double> to_number(const std::string& raw)
{
  const std::string s = trim(raw);
  if (s.empty())
    return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v))
    return std::nullopt;
  return v;
}

std::string num(double v)
{
  if (!std::isfinite(v))
    return "NaN";
  char b[40];
  std::snprintf(b, sizeof b, "%.10g", v);
  return b;
}

/// A gnuplot double-quoted string (noenhanced terminals: only backslash, quote and line breaks need care).
std::string gq(const std::string& s)
{
  std::string q = "\"";
  for (char c : s) {
    if (c == '\\' || c == '"')
      q += '\\', q += c;
    else if (c == '\n')
      q += "\\n";
    else if (c == '\r' || c == '\t')
      q += ' ';
    else
      q += c;
  }
  return q + "\"";
}

// ---- The table ----------------------------------------------------------------------------------------------

struct SeriesTable {
  std::string file;
  CsvTable csv;
  std::vector<size_t> ok;  ///< rows whose status is ok

  /// A column by name: exactly, or as written by `dtsim sweep` for a varied input ("vary.<key>"); -1 when none.
  int find(const std::string& name) const
  {
    for (size_t c = 0; c < csv.columns.size(); ++c)
      if (csv.columns[c] == name)
        return int(c);
    for (size_t c = 0; c < csv.columns.size(); ++c)
      if (csv.columns[c] == "vary." + name)
        return int(c);
    return -1;
  }

  int need(const std::string& name, const std::string& what) const
  {
    int c = find(name);
    if (c >= 0)
      return c;
    std::string msg = "unknown column '" + name + "'";
    std::string near = config::closest(name, csv.columns);
    if (!near.empty())
      msg += " (did you mean '" + near + "'?)";
    refuse(file, 0, what, msg + "; the columns are: " + config::join_list(csv.columns));
  }

  const std::string& cell(size_t row, int c) const { return csv.rows[row][size_t(c)]; }
  int line(size_t row) const { return csv.lines[row]; }
};

/// Outputs of `dtsim run --format json` (flattened), as opposed to the inputs a sweep varies.
bool is_output(const std::string& c)
{
  static const std::set<std::string> names = {"status", "reason", "point", "dtsim_version", "scenario", "model",
                                              "params", "fits", "why_not_fitting", "power_w", "step_time_s",
                                              "samples_per_s", "tokens_per_s", "model_tflops_per_device",
                                              "hardware_tflops_per_device", "mfu", "hfu", "energy_per_step_j",
                                              "time_to_train_s", "goodput"};
  for (const char* p : {"memory.", "breakdown.", "breakdown_per_stage", "simulation.", "plan.", "wafer.",
                        "time_to_train."})
    if (starts_with(c, p))
      return true;
  return names.count(c) > 0;
}

struct PlotInput {
  std::string key;  ///< scenario key, e.g. "parallel.tp"
  int col;          ///< column shown for it (the hardware name rather than its file when both are there)
};

/// The inputs that take more than one value over the usable rows: the "vary.<key>" columns of `dtsim sweep`,
/// or (in a CSV without them) every column that is not an output.
std::vector<PlotInput> varied_inputs(const SeriesTable& t)
{
  bool sweep_format = false;
  for (const auto& c : t.csv.columns)
    sweep_format = sweep_format || starts_with(c, "vary.");
  std::vector<PlotInput> v;
  for (size_t c = 0; c < t.csv.columns.size(); ++c) {
    const std::string& name = t.csv.columns[c];
    std::string key;
    if (sweep_format) {
      if (!starts_with(name, "vary."))
        continue;
      key = name.substr(5);
    } else {
      if (is_output(name))
        continue;
      key = name;
    }
    std::set<std::string> values;
    for (size_t r : t.ok)
      values.insert(t.cell(r, int(c)));
    if (values.size() > 1)
      v.push_back({key, t.find(key)});
  }
  return v;
}

std::vector<std::string> values_of(const SeriesTable& t, int col, const std::vector<size_t>& rows)
{
  std::vector<std::string> v;
  for (size_t r : rows)
    v.push_back(t.cell(r, col));
  return v;
}

/// What a bar chart compares: the varied inputs, in the CSV's order (a sweep's outermost --vary first), where a
/// sweep over scenario files (the input "scenario") stands for the model and the hardware its files name, those of
/// the two that differ between `rows` (the scenario itself when neither does).
std::vector<PlotInput> bar_dimensions(const SeriesTable& t, const std::vector<PlotInput>& varied,
                                      const std::vector<size_t>& rows)
{
  std::vector<PlotInput> dims;
  auto add = [&](const PlotInput& d) {
    if (std::none_of(dims.begin(), dims.end(), [&](const PlotInput& e) { return e.col == d.col; }))
      dims.push_back(d);
  };
  for (const auto& v : varied) {
    if (v.key != "scenario") {
      add(v);
      continue;
    }
    size_t before = dims.size();
    for (const char* name : {"model", "hardware"}) {
      const int c = t.find(name);
      const auto values = c >= 0 ? values_of(t, c, rows) : std::vector<std::string>{};
      if (std::set<std::string>(values.begin(), values.end()).size() > 1)
        add({name, c});
    }
    if (dims.size() == before)
      add(v);
  }
  return dims;
}

// ---- What the y axis shows -----------------------------------------------------------------------------------

struct Measure {
  std::string label;
  double scale = 1;
  bool total_rate = false;  ///< grows with the devices: ideal scaling is linear
  bool per_device = false;  ///< a per-device rate: ideal scaling keeps it flat
  /// for titles: the label without its unit
  std::string name() const
  {
    if (label.rfind("MFU", 0) == 0 || label.find(", MFU") != std::string::npos)
      return "MFU";
    if (label.find(", HFU") != std::string::npos)
      return "HFU";
    return label.substr(0, label.find(" ("));
  }
};

Measure measure_of(const std::string& key)
{
  if (key == "samples_per_s")
    return {"throughput (samples/s)", 1, true, false};
  if (key == "tokens_per_s")
    return {"throughput (tokens/s)", 1, true, false};
  if (key == "step_time_s")
    return {"step time (s)"};
  if (key == "mfu")
    return {"model FLOPs utilization, MFU (%)", 100, false, true};
  if (key == "time_to_train_s")
    return {"time to train (days)", 1.0 / 86400};
  if (key == "goodput")
    return {"goodput (%)", 100};
  if (key == "hfu")
    return {"hardware FLOPs utilization, HFU (%)", 100, false, true};
  if (key == "model_tflops_per_device")
    return {"model TFLOP/s per device", 1, false, true};
  if (key == "hardware_tflops_per_device")
    return {"hardware TFLOP/s per device", 1, false, true};
  if (key == "energy_per_step_j")
    return {"energy per step (J)"};
  if (key == "power_w")
    return {"power (W)"};
  if (key.find("bytes") != std::string::npos)
    return {key + " (GiB)", 1.0 / 1073741824.0};
  if (ends_with(key, "_s"))
    return {key + " (s)"};
  return {key};
}

// ---- The parts of the step-time breakdown --------------------------------------------------------------------

struct Part {
  std::string name, colour;
  std::vector<double> values;  ///< per point, seconds
};

/// The stacked parts per row: the known breakdown columns in a fixed order with readable names (compute net of
/// recomputation when recomputation shows), then any other breakdown column; parts that are zero everywhere are
/// left out.
std::vector<Part> breakdown_parts(const SeriesTable& t, const std::vector<size_t>& rows)
{
  struct Known {
    const char* column;
    const char* name;
    const char* colour;
  };
  static const Known known[] = {{"breakdown.compute_s", "compute", "#4E79A7"},
                                {"breakdown.recompute_s", "recompute", "#A0CBE8"},
                                {"breakdown.exposed_tp_comm_s", "exposed TP comm", "#F28E2B"},
                                {"breakdown.exposed_pp_comm_s", "exposed PP comm", "#EDC948"},
                                {"breakdown.exposed_dp_comm_s", "exposed DP comm", "#E15759"},
                                {"breakdown.exposed_ep_comm_s", "exposed expert all-to-all", "#FF9DA7"},
                                {"breakdown.exposed_cp_comm_s", "exposed context ring", "#76B7B2"},
                                {"breakdown.bubble_s", "bubble", "#BAB0AC"},
                                {"breakdown.optimizer_s", "optimizer", "#59A14F"},
                                {"breakdown.step_collectives_s", "step all-reduces", "#D4A6C8"},
                                {"breakdown.exposed_weight_streaming_s", "weight streaming", "#B07AA1"},
                                {"breakdown.exposed_fabric_s", "fabric", "#9C755F"}};
  static const char* extra_colours[] = {"#8CD17D", "#D37295", "#F1CE63", "#86BCB6"};
  auto column = [&](int c) {
    std::vector<double> v;
    for (size_t r : rows)
      v.push_back(c < 0 ? 0.0 : to_number(t.cell(r, c)).value_or(0.0));
    return v;
  };
  std::vector<Part> parts;
  std::set<std::string> used;
  for (const auto& k : known) {
    used.insert(k.column);
    int c = -1;
    for (size_t i = 0; i < t.csv.columns.size(); ++i)
      if (t.csv.columns[i] == k.column)
        c = int(i);
    if (c >= 0)
      parts.push_back({k.name, k.colour, column(c)});
  }
  // recompute_s is "of which recomputation" inside compute_s: "compute" is net of it when it shows
  auto find_part = [&](const std::string& n) -> Part* {
    for (auto& p : parts)
      if (p.name == n)
        return &p;
    return nullptr;
  };
  Part* compute = find_part("compute");
  Part* recompute = find_part("recompute");
  if (compute && recompute &&
      std::any_of(recompute->values.begin(), recompute->values.end(), [](double v) { return v > 0; })) {
    for (size_t i = 0; i < compute->values.size(); ++i)
      compute->values[i] -= recompute->values[i];
  }
  size_t extra = 0;
  for (size_t i = 0; i < t.csv.columns.size(); ++i) {
    const std::string& c = t.csv.columns[i];
    if (!starts_with(c, "breakdown.") || used.count(c))
      continue;
    std::string name = c.substr(10);
    if (ends_with(name, "_s"))
      name.resize(name.size() - 2);
    std::replace(name.begin(), name.end(), '_', ' ');
    parts.push_back({name, extra_colours[extra++ % 4], column(int(i))});
  }
  std::vector<Part> shown;
  for (auto& p : parts)
    if (std::any_of(p.values.begin(), p.values.end(), [](double v) { return std::fabs(v) > 0; }) ||
        (shown.empty() && &p == &parts.back()))
      shown.push_back(std::move(p));
  if (shown.empty() && !parts.empty())
    shown.push_back(parts.front());
  return shown;
}

/// "exposed DP comm changes most: 1.23 s at 100 Gb/s -> 0.31 s at 800 Gb/s".
std::string largest_change(const std::vector<Part>& parts, const std::vector<std::string>& labels)
{
  const Part* best = nullptr;
  double best_range = 0;
  for (const auto& p : parts) {
    auto [lo, hi] = std::minmax_element(p.values.begin(), p.values.end());
    if (lo != p.values.end() && *hi - *lo > best_range)
      best = &p, best_range = *hi - *lo;
  }
  if (!best || labels.size() < 2)
    return "";
  auto secs = [](double v) { return format_number(v < 0.1 ? "%.3g s" : "%.2f s", v); };
  auto one_line = [](std::string s) {
    std::replace(s.begin(), s.end(), '\n', ' ');
    return s;
  };
  return best->name + " changes most: " + secs(best->values.front()) + " at " + one_line(labels.front()) + " -> " +
         secs(best->values.back()) + " at " + one_line(labels.back());
}

// ---- Gnuplot script pieces -----------------------------------------------------------------------------------

const char* kSeriesColours[] = {"#4E79A7", "#E15759", "#59A14F", "#F28E2B", "#B07AA1",
                                "#76B7B2", "#EDC948", "#9C755F", "#FF9DA7", "#BAB0AC"};

struct Script {
  std::string blocks;  ///< datablocks, defined once
  std::string body;    ///< drawn once per terminal
  int width = 1000, height = 700;
};

std::string style_preamble()
{
  std::string s = "reset\n";
  s += "set datafile missing 'NaN'\n";
  s += "set border 3 lw 1 lc rgb '#555555'\n";
  s += "set tics nomirror out scale 0.6 textcolor rgb '#333333'\n";
  s += "set grid back lt 1 lw 1 lc rgb '#E6E6E6', lt 1 lw 0.6 lc rgb '#F2F2F2'\n";
  s += "set key noautotitle textcolor rgb '#222222' samplen 2.5 spacing 1.15\n";
  s += "set title font ',15' textcolor rgb '#111111'\n";
  for (int i = 0; i < 10; ++i)
    s += "set style line " + std::to_string(i + 1) + " lc rgb '" + kSeriesColours[i] + "' lw 2.2 pt 7 ps 1.0\n";
  return s;
}

std::string datablock(const std::string& name, const std::vector<std::vector<double>>& rows)
{
  std::string s = "$" + name + " << EOD\n";
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i)
      s += (i ? " " : "") + num(r[i]);
    s += "\n";
  }
  return s + "EOD\n";
}

/// "set xtics (...)": explicit tics at `at` with `labels` (empty strings for bare tic marks).
std::string xtics(const std::vector<double>& at, const std::vector<std::string>& labels)
{
  std::string s = "set xtics (";
  for (size_t i = 0; i < at.size(); ++i)
    s += (i ? ", " : "") + gq(labels[i]) + " " + num(at[i]);
  return s + ")\n";
}

/// Rough width of a text in pixels at the PNG font (11 pt Sans).
// The SVG terminal (fontscale 1.3, below) draws text about 1.15 times as wide as text_px estimates (measured with
// DejaVu Sans, 8.6 px per character): margins that must hold text are sized with this factor so that nothing is
// clipped in the SVG (the PNG only gets a little more room).
constexpr double kSvgTextScale = 1.2;

double text_px(const std::string& s)
{
  size_t longest = 0, cur = 0;
  for (char c : s) {
    if (c == '\n')
      longest = std::max(longest, cur), cur = 0;
    else if ((c & 0xC0) != 0x80)
      ++cur;
  }
  return 7.5 * double(std::max(longest, cur));
}

/// Numeric tic labels that would overlap their neighbour are left blank (the tic mark stays): kept from the right, so
/// that the largest value is always labelled. `lo`, `hi` is the x range drawn over `plot_px` pixels.
std::vector<std::string> thin_labels(const std::vector<double>& at, std::vector<std::string> labels, bool logx,
                                     double lo, double hi, double plot_px)
{
  auto px = [&](double x) {
    return logx ? plot_px * std::log(x / lo) / std::log(hi / lo) : plot_px * (x - lo) / (hi - lo);
  };
  if (at.empty() || !(hi > lo) || (logx && lo <= 0))
    return labels;
  size_t kept = at.size() - 1;
  for (size_t i = at.size() - 1; i-- > 0;) {
    const double gap = px(at[kept]) - px(at[i]);
    if (gap < (text_px(labels[kept]) + text_px(labels[i])) / 2 + 8)
      labels[i].clear();
    else
      kept = i;
  }
  return labels;
}

/// Categorical x labels: rotated when they would not fit side by side in `plot_px`.
/// Labels of several lines (one per varied input) stay upright when each line fits; otherwise they are joined
/// on one line and rotated. `extra_px` is the height to add to the canvas for them.
std::string category_xtics(std::vector<std::string> labels, double plot_px, int& extra_px)
{
  std::vector<double> at;
  double widest = 0;
  size_t lines = 1;
  for (size_t i = 0; i < labels.size(); ++i) {
    at.push_back(double(i));
    widest = std::max(widest, text_px(labels[i]));
    lines = std::max<size_t>(lines, 1 + size_t(std::count(labels[i].begin(), labels[i].end(), '\n')));
  }
  const double slot = plot_px / std::max<double>(1, double(labels.size()));
  const bool rotated = widest > 0.9 * slot;
  extra_px = int(17 * (lines - 1));
  if (rotated) {
    widest = 0;
    for (auto& l : labels) {
      for (auto& c : l)
        if (c == '\n')
          c = ';';
      size_t k;
      while ((k = l.find(";")) != std::string::npos)
        l.replace(k, 1, ", ");
      widest = std::max(widest, text_px(l));
    }
    extra_px = int(std::min(320.0, 0.6 * widest));
  }
  std::string s = rotated ? "set xtics rotate by 35 right\n" : "set xtics norotate\n";
  // room on the left for the first rotated label (it leans left of its bar, cos 35 deg = 0.82 of its width), and
  // for the y tic labels and y label (12 characters); measured in the SVG, where the text is widest
  const double lean = rotated ? 0.82 * kSvgTextScale * text_px(labels.front()) - 0.6 * slot : 0;
  s += "set lmargin " + num(std::max(12.0, std::ceil(lean / 7.5) + 2)) + "\n";
  return s + xtics(at, labels);
}

/// A long value cut for a tic label: "DGX A100 80GB, 8 x HDR ..." -> "DGX A100 80GB".
std::string shorten(const std::string& v)
{
  if (v.size() <= 24)
    return v;
  size_t cut = v.find_first_of(",(");
  if (cut != std::string::npos && cut >= 3 && cut <= 24)
    return trim(v.substr(0, cut));
  size_t n = 22;
  while (n > 0 && (v[n] & 0xC0) == 0x80)  // not inside a UTF-8 character
    --n;
  return v.substr(0, n) + "...";
}

/// Stacked boxes (boxxyerror: x y xlow xhigh ylow yhigh) of the parts at the given x positions.
void stacked_boxes(const std::string& block, const std::vector<Part>& parts, const std::vector<double>& x,
                   const std::vector<double>& xlow, const std::vector<double>& xhigh, Script& s,
                   std::string& plot_cmd, bool titles)
{
  std::vector<std::vector<double>> rows;
  for (size_t i = 0; i < x.size(); ++i) {
    std::vector<double> r = {x[i], xlow[i], xhigh[i]};
    double base = 0;
    for (const auto& p : parts) {
      r.push_back(base);
      base += std::max(0.0, p.values[i]);
      r.push_back(base);
    }
    r.push_back(base);  // total
    rows.push_back(r);
  }
  s.blocks += datablock(block, rows);
  // top part first so that the legend reads in the order of the stack
  for (size_t k = parts.size(); k-- > 0;) {
    const std::string lo = std::to_string(4 + 2 * k), hi = std::to_string(5 + 2 * k);
    plot_cmd += (plot_cmd.empty() ? "plot " : ", \\\n     ") + std::string("$") + block + " using 1:(($" + lo + "+$" +
                hi + ")/2):2:3:" + lo + ":" + hi + " with boxxyerror fs solid 0.92 border lc rgb 'white' lc rgb '" +
                parts[k].colour + "'" + (titles ? " title " + gq(parts[k].name) : " notitle");
  }
}

// ---- The charts ----------------------------------------------------------------------------------------------

struct Resolved {
  std::string kind, title;
  std::vector<size_t> rows;                  ///< usable rows, in CSV order
  std::vector<PlotInput> varied;             ///< varied inputs
  std::string x_key, y_key;                  ///< column names as the user would write them
  int x_col = -1, y_col = -1;                ///< -1: not used
  std::vector<std::string> group_keys;       ///< columns making the series
  std::vector<int> group_cols;
};

std::string group_of(const SeriesTable& t, const Resolved& r, size_t row)
{
  std::string g;
  for (size_t k = 0; k < r.group_cols.size(); ++k) {
    const std::string& v = t.cell(row, r.group_cols[k]);
    // a bare number ("512") says nothing in a legend without its key ("devices=512")
    const bool named = r.group_cols.size() > 1 || parse_axis_value(v).has_value();
    g += (k ? ", " : "") + (named ? r.group_keys[k] + "=" + v : v);
  }
  return g;
}

/// Groups of rows in order of first appearance.
std::vector<std::pair<std::string, std::vector<size_t>>> groups(const SeriesTable& t, const Resolved& r)
{
  std::vector<std::pair<std::string, std::vector<size_t>>> g;
  for (size_t row : r.rows) {
    std::string name = group_of(t, r, row);
    auto it = std::find_if(g.begin(), g.end(), [&](const auto& p) { return p.first == name; });
    if (it == g.end())
      g.push_back({name, {row}});
    else
      it->second.push_back(row);
  }
  return g;
}

double need_number(const SeriesTable& t, size_t row, int col, const std::string& what)
{
  auto v = to_number(t.cell(row, col));
  if (!v)
    refuse(t.file, t.line(row), what,
           "column '" + t.csv.columns[size_t(col)] + "': expected a number, got '" + t.cell(row, col) + "'");
  return *v;
}

/// Tics of a log axis at 1, 2, 5 times the powers of ten inside [lo, hi] (labelled), 1..9 minor ones unlabelled.
std::string log_ytics(double lo, double hi)
{
  std::string s = "set ytics (";
  bool first = true;
  for (int e = int(std::floor(std::log10(lo))); e <= int(std::ceil(std::log10(hi))); ++e)
    for (int k = 1; k <= 9; ++k) {
      const double v = k * std::pow(10.0, e);
      if (v < lo || v > hi)
        continue;
      const bool major = k == 1 || k == 2 || k == 5;
      // 2000000 reads better as "2M" than as "2e+06", 20000 as "20k"
      const std::string text = v >= 1e6   ? format_number("%gM", v / 1e6)
                               : v >= 1e4 ? format_number("%gk", v / 1e3)
                                          : format_number("%g", v);
      s += (first ? "" : ", ") + std::string(major ? gq(text) + " " : "\"\" ") + num(v) +
           (major ? "" : " 1");
      first = false;
    }
  return s + ")\nset grid ytics mytics\n";
}

Script scaling_chart(const SeriesTable& t, const Resolved& r, std::ostream& log)
{
  Script s;
  const Measure m = measure_of(r.y_key);
  const bool ideal = m.total_rate || m.per_device;
  auto gs = groups(t, r);
  std::set<double> xs;
  double ymin = INFINITY, ymax = 0, effmax = 100, effmin = 100;
  std::string plot_top, plot_bottom, labels_bottom;
  for (size_t g = 0; g < gs.size(); ++g) {
    std::vector<std::pair<double, double>> pts;
    for (size_t row : gs[g].second)
      pts.push_back({need_number(t, row, r.x_col, "--x"), need_number(t, row, r.y_col, "--y") * m.scale});
    std::sort(pts.begin(), pts.end());
    for (size_t i = 1; i < pts.size(); ++i)
      if (pts[i].first == pts[i - 1].first) {
        log << "plot: note: several rows of " << (gs[g].first.empty() ? "the sweep" : "'" + gs[g].first + "'")
            << " have " << r.x_key << " = " << num(pts[i].first)
            << "; give the other varied input as --group to draw one line each\n";
        break;
      }
    std::vector<std::vector<double>> rows;
    const double x0 = pts.front().first, y0 = pts.front().second;
    for (auto [x, y] : pts) {
      double id = m.total_rate ? y0 * x / x0 : y0;
      double eff = id > 0 ? 100.0 * y / id : NAN;
      rows.push_back({x, y, id, eff});
      xs.insert(x);
      if (y > 0)
        ymin = std::min(ymin, y);
      ymax = std::max({ymax, y, ideal ? id : 0.0});
      if (std::isfinite(eff))
        effmax = std::max(effmax, eff), effmin = std::min(effmin, eff);
    }
    const std::string block = "g" + std::to_string(g), ls = std::to_string(g % 10 + 1);
    s.blocks += datablock(block, rows);
    plot_top += (plot_top.empty() ? "plot " : ", \\\n     ") + std::string("$") + block +
                " using 1:2 with linespoints ls " + ls + " title " +
                gq(gs[g].first.empty() ? "simulated" : gs[g].first);
    if (ideal) {
      plot_top += ", \\\n     $" + block + " using 1:3 with lines ls " + ls + " dt (10,6) lw 1.5 notitle";
      plot_bottom += (plot_bottom.empty() ? "plot 100 with lines lc rgb '#777777' dt (10,6) lw 1.5 notitle" : "") +
                     std::string(", \\\n     $") + block + " using 1:4 with linespoints ls " + ls + " notitle";
      // the efficiency at the largest point, written beside it
      labels_bottom += ", \\\n     $" + block + " every ::" + std::to_string(rows.size() - 1) +
                       " using 1:4:(sprintf('%.0f%%', $4)) with labels left offset 1.2,0 font ',10' textcolor ls " +
                       ls + " notitle";
    }
  }
  if (ideal)
    plot_top += ", \\\n     NaN with lines lc rgb '#555555' dt (10,6) lw 1.5 title " +
                gq(m.total_rate ? "ideal linear scaling from the smallest point"
                                : "ideal: flat from the smallest point");

  std::vector<double> at(xs.begin(), xs.end());
  std::vector<std::string> empty(at.size()), numbers;
  // Power is written in watts; a reader compares clusters in kW.
  const double x_shown = r.x_key == "power_w" ? 1e-3 : 1.0;
  for (double x : at)
    numbers.push_back(num(x * x_shown));
  const double xmin = at.front(), xmax = at.back();
  const bool logx = xmin > 0 && xmax / xmin >= 4;
  // device counts such as 1536, 1920, 2520, 3072 sit close on a log axis
  numbers = logx ? thin_labels(at, numbers, true, xmin / 1.3, xmax * 1.3, 0.84 * 1000)
                 : thin_labels(at, numbers, false, xmin - 0.05 * (xmax - xmin + 1), xmax + 0.05 * (xmax - xmin + 1),
                               0.84 * 1000);
  // a total rate on a log2 device axis: log y too, so that ideal scaling is a straight line
  const bool logy = ymin > 0 && ymax / ymin >= (logx && m.total_rate ? 4 : 20);

  std::string& b = s.body;
  b += style_preamble();
  b += "set multiplot\n";
  b += "set lmargin at screen 0.11\nset rmargin at screen 0.95\n";
  if (logx)
    b += "set logscale x 2\nset xrange [" + num(xmin / 1.3) + ":" + num(xmax * 1.3) + "]\n";
  else
    b += "set xrange [" + num(xmin - 0.05 * (xmax - xmin + 1)) + ":" + num(xmax + 0.05 * (xmax - xmin + 1)) + "]\n";
  // top: the measure itself
  // the title and the legend (long hardware names) above the chart, where they cover no line
  const double key_rows = double(gs.size() + (ideal ? 1 : 0));
  const double top = 0.93 - (key_rows * 19 + 14) / double(ideal ? 780 : 560);
  b += "set label 99 " + gq(r.title) + " at screen 0.5, screen 0.965 center font ',15' textcolor rgb '#111111'\n";
  b += "set tmargin at screen " + num(top) + "\nset bmargin at screen " + std::string(ideal ? "0.42" : "0.13") + "\n";
  b += "set ylabel " + gq(m.label) + "\n";
  if (logy)
    b += "set logscale y 10\nset yrange [" + num(ymin / 1.5) + ":" + num(ymax * 1.5) + "]\n" +
         log_ytics(ymin / 1.5, ymax * 1.5);
  else
    b += "set yrange [0:" + num(ymax * 1.12) + "]\n";
  b += "set format y '%g'\n";
  b += "set key at screen 0.11, screen 0.935 top left vertical Left reverse box lc rgb '#CCCCCC' width 1\n";
  std::string xlabel = r.x_key == "devices" ? "devices" : r.x_key == "power_w" ? "power (kW)" : r.x_key;
  if (logx)
    xlabel = r.x_key == "power_w" ? "power (kW, log2 scale)" : xlabel + " (log2 scale)";
  if (ideal) {
    b += xtics(at, empty);
    b += plot_top + "\n";
    // bottom: parallel efficiency
    b += "unset label 99\nunset logscale y\nset ytics autofreq\nset grid nomytics\n";
    b += "set tmargin at screen 0.36\nset bmargin at screen 0.10\n";
    b += "set ylabel 'parallel efficiency (%)'\nset xlabel " + gq(xlabel) + "\n";
    const double eff_lo = std::max(0.0, std::floor((effmin - 5) / 10) * 10);
    const double eff_hi = std::ceil((effmax + 5) / 10) * 10;
    b += "set yrange [" + num(eff_lo) + ":" + num(eff_hi) + "]\nset ytics " + num(eff_hi - eff_lo > 50 ? 20 : 10) +
         "\n";
    b += xtics(at, numbers);
    b += "unset key\n";
    b += plot_bottom + labels_bottom + "\n";
  } else {
    b += "set xlabel " + gq(xlabel) + "\n";
    b += xtics(at, numbers);
    b += plot_top + "\n";
  }
  b += "unset multiplot\n";
  s.width = 1000;
  s.height = ideal ? 780 : 560;
  return s;
}

/// Label of a point on a categorical axis: the x column's value, or the varied inputs' values.
std::string point_label(const SeriesTable& t, const Resolved& r, size_t row, size_t index)
{
  if (r.x_col >= 0)
    return shorten(t.cell(row, r.x_col));
  if (r.varied.size() == 1)
    return shorten(t.cell(row, r.varied[0].col));
  if (r.varied.empty()) {
    int p = t.find("point");
    return p >= 0 ? "point " + t.cell(row, p) : "row " + std::to_string(index + 1);
  }
  std::string s;
  for (size_t k = 0; k < r.varied.size(); ++k) {
    std::string key = r.varied[k].key;
    size_t dot = key.rfind('.');
    s += (k ? "\n" : "") + (dot == std::string::npos ? key : key.substr(dot + 1)) + "=" +
         shorten(t.cell(row, r.varied[k].col));
  }
  return s;
}

std::string category_xlabel(const Resolved& r)
{
  if (r.x_col >= 0)
    return r.x_key;
  std::vector<std::string> keys;
  for (const auto& v : r.varied)
    keys.push_back(v.key);
  return keys.empty() ? "point" : config::join_list(keys);
}

Script whatif_chart(const SeriesTable& t, const Resolved& r, std::ostream& log)
{
  Script s;
  const Measure m = measure_of(r.y_key);
  auto axis = numeric_axis(values_of(t, r.x_col, r.rows));
  if (!axis)
    refuse(t.file, 0, "--x",
           "column '" + r.x_key + "' is not numeric (numbers, or quantities such as '200 Gb/s' in one dimension): " +
               "the what-if chart needs a numeric x; try --kind breakdown");
  std::map<size_t, double> xval;
  for (size_t i = 0; i < r.rows.size(); ++i)
    xval[r.rows[i]] = axis->values[i];
  auto gs = groups(t, r);
  std::set<double> xs(axis->values.begin(), axis->values.end());
  std::vector<double> at(xs.begin(), xs.end());
  const double xmin = at.front(), xmax = at.back();
  const bool logx = xmin > 0 && xmax / xmin >= 4;
  // half width of the bars, in the axis's own scale (log2 or linear)
  auto tx = [&](double x) { return logx ? std::log2(x) : x; };
  auto itx = [&](double u) { return logx ? std::exp2(u) : u; };
  double gap = at.size() > 1 ? INFINITY : (logx ? 1.0 : std::max(1.0, std::fabs(xmin)));
  for (size_t i = 1; i < at.size(); ++i)
    gap = std::min(gap, tx(at[i]) - tx(at[i - 1]));
  const double half = 0.3 * gap;
  const double lo_u = tx(xmin) - 1.6 * half, hi_u = tx(xmax) + 1.6 * half;

  std::string xlabel = r.x_key;
  if (!axis->unit.empty() || logx)
    xlabel += " (" + axis->unit + (!axis->unit.empty() && logx ? ", " : "") + (logx ? "log2 scale" : "") + ")";
  std::vector<std::string> numbers;
  for (double x : at)
    numbers.push_back(format_number("%g", x));
  numbers = thin_labels(at, numbers, logx, itx(lo_u), itx(hi_u), 0.63 * 1040);

  std::string top;
  double ymax = 0;
  const bool value_labels = gs.size() == 1 && at.size() <= 16;
  for (size_t g = 0; g < gs.size(); ++g) {
    std::vector<std::vector<double>> rows;
    for (size_t row : gs[g].second)
      rows.push_back({xval[row], need_number(t, row, r.y_col, "--y") * m.scale});
    std::sort(rows.begin(), rows.end());
    for (size_t i = 1; i < rows.size(); ++i)
      if (rows[i][0] == rows[i - 1][0]) {
        log << "plot: note: several rows have " << r.x_key << " = " << num(rows[i][0])
            << "; give the other varied input as --group to draw one line each\n";
        break;
      }
    for (const auto& row : rows)
      ymax = std::max(ymax, row[1]);
    const std::string block = "g" + std::to_string(g), ls = std::to_string(g % 10 + 1);
    s.blocks += datablock(block, rows);
    top += (top.empty() ? "plot " : ", \\\n     ") + std::string("$") + block + " using 1:2 with linespoints ls " + ls +
           (gs[g].first.empty() ? " notitle" : " title " + gq(gs[g].first));
    if (value_labels)
      top += ", \\\n     $" + block + " using 1:2:(sprintf('" + (m.label == "step time (s)" ? "%.3g s" : "%.3g") +
             "', $2)) with labels offset 0,1.1 font ',10' textcolor rgb '#333333' notitle";
  }

  // one stacked breakdown panel per series (at most 4)
  const size_t panels = gs.size() <= 4 ? gs.size() : 0;
  if (gs.size() > 4)
    log << "plot: note: " << gs.size() << " series: the stacked breakdown is drawn for at most 4; use --kind "
        << "breakdown for the rest\n";
  // several series: their legend (long hardware names) goes between the title and the chart
  const double key_px = gs.size() > 1 ? double(gs.size()) * 19 + 16 : 0;
  const double top_h = 330, panel_h = 300, head = 60 + key_px, foot = 95;
  s.width = 1040;
  s.height = int(head + top_h + double(panels) * panel_h + foot);
  const double H = s.height;
  auto at_screen = [&](double px_from_top) { return num(1.0 - px_from_top / H); };

  std::string& b = s.body;
  b += style_preamble();
  b += "set multiplot\n";
  b += "set lmargin at screen 0.11\nset rmargin at screen 0.74\n";
  if (logx)
    b += "set logscale x 2\n";
  b += "set xrange [" + num(itx(lo_u)) + ":" + num(itx(hi_u)) + "]\n";
  b += "set tmargin at screen " + at_screen(head) + "\nset bmargin at screen " + at_screen(head + top_h - 40) + "\n";
  b += "set label 99 " + gq(r.title) + " at screen 0.5, screen " + at_screen(28) +
       " center font ',15' textcolor rgb '#111111'\n";
  b += "set ylabel " + gq(m.label) + "\nset yrange [0:" + num(ymax * 1.18) + "]\nset format y '%g'\n";
  b += "unset xlabel\n";  // the panel below carries it: the same axis
  b += xtics(at, numbers);
  b += gs.size() > 1 ? "set key at screen 0.11, screen " + at_screen(50) +
                          " top left vertical Left reverse box lc rgb '#CCCCCC' width 1\n"
                    : "unset key\n";
  b += top + "\n";
  for (size_t g = 0; g < panels; ++g) {
    std::vector<double> x, xl, xh;
    std::vector<std::string> labels;
    std::vector<size_t> rows = gs[g].second;
    std::sort(rows.begin(), rows.end(), [&](size_t a, size_t c) { return xval[a] < xval[c]; });
    for (size_t row : rows) {
      x.push_back(xval[row]);
      xl.push_back(itx(tx(xval[row]) - half));
      xh.push_back(itx(tx(xval[row]) + half));
      labels.push_back(t.cell(row, r.x_col));
    }
    auto parts = breakdown_parts(t, rows);
    std::string cmd;
    stacked_boxes("b" + std::to_string(g), parts, x, xl, xh, s, cmd, g == 0);
    double total_max = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      double sum = 0;
      for (const auto& p : parts)
        sum += std::max(0.0, p.values[i]);
      total_max = std::max(total_max, sum);
    }
    const double top_px = head + top_h + double(g) * panel_h + 70;
    b += "unset label 99\n";
    b += "set tmargin at screen " + at_screen(top_px) + "\nset bmargin at screen " +
         at_screen(top_px + panel_h - (g + 1 == panels ? 70 : 90)) + "\n";
    std::string what = largest_change(parts, labels);
    std::string heading = gs[g].first.empty() ? "where the step time goes" : gs[g].first;
    b += "set title " + gq(heading + (what.empty() ? "" : "\n" + what)) + " font ',11'\n";
    b += "set ylabel 'time per step (s)'\nset yrange [0:" + num(total_max * 1.1) + "]\n";
    b += g + 1 == panels ? "set xlabel " + gq(xlabel) + "\n" : "unset xlabel\n";
    // the legend of the parts, in the right margin beside the first panel
    b += g == 0 ? "set key at screen 0.76, screen " + at_screen(top_px) +
                      " top left vertical Left reverse box lc rgb '#CCCCCC' width 1\n"
                : "unset key\n";
    b += cmd + "\n";
  }
  b += "unset multiplot\n";
  return s;
}

Script breakdown_chart(const SeriesTable& t, const Resolved& r, std::ostream&)
{
  Script s;
  std::vector<std::string> labels;
  std::vector<double> x, xl, xh;
  for (size_t i = 0; i < r.rows.size(); ++i) {
    labels.push_back(point_label(t, r, r.rows[i], i));
    x.push_back(double(i));
    xl.push_back(double(i) - 0.34);
    xh.push_back(double(i) + 0.34);
  }
  auto parts = breakdown_parts(t, r.rows);
  if (parts.empty())
    refuse(t.file, 0, "--kind breakdown",
           "no breakdown.* column; the columns are: " + config::join_list(t.csv.columns));
  std::string cmd;
  stacked_boxes("b", parts, x, xl, xh, s, cmd, true);
  double total_max = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double sum = 0;
    for (const auto& p : parts)
      sum += std::max(0.0, p.values[i]);
    total_max = std::max(total_max, sum);
  }
  const size_t total_col = 4 + 2 * parts.size();
  const std::string tc = "$" + std::to_string(total_col);
  cmd += ", \\\n     $b using 1:" + std::to_string(total_col) + ":(" + tc + " >= 10 ? sprintf('%.1f s', " + tc +
         ") : " + tc + " >= 0.1 ? sprintf('%.2f s', " + tc + ") : sprintf('%.3g s', " + tc +
         ")) with labels offset 0,0.8 font ',10' textcolor rgb '#333333' notitle";
  s.width = std::clamp(int(420 + 80 * labels.size()), 900, 2400);
  int extra_px = 0;
  std::string tics = category_xtics(labels, s.width - 400, extra_px);
  s.height = 600 + extra_px;
  std::string& b = s.body;
  b += style_preamble();
  b += "set title " + gq(r.title) + "\n";
  b += "set ylabel 'time per step (s)'\nset yrange [0:" + num(total_max * 1.12) + "]\nset format y '%g'\n";
  b += "set xlabel " + gq(category_xlabel(r)) + "\n";
  b += "set xrange [-0.6:" + num(double(labels.size()) - 0.4) + "]\n";
  b += "set grid noxtics ytics\n";
  b += tics;
  // The legend's room on the right, sized for its longest entry (gnuplot's own estimate is too narrow for the SVG):
  // sample, gaps and box about 70 px.
  double legend_px = 0;
  for (const auto& p : parts)
    legend_px = std::max(legend_px, kSvgTextScale * text_px(p.name) + 70);
  const double plot_right = 1 - legend_px / s.width;
  b += "set rmargin at screen " + num(plot_right) + "\n";
  b += "set key at screen " + num(plot_right + 15.0 / s.width) +
       ", graph 1 top left vertical Left reverse box lc rgb '#CCCCCC' width 1\n";
  std::vector<std::string> named = labels;
  if (r.x_col < 0 && r.varied.size() == 1)
    for (auto& l : named)
      l = r.varied[0].key + " = " + l;
  std::string what = largest_change(parts, named);
  if (!what.empty() && labels.size() > 1 && (r.x_col >= 0 || r.varied.size() == 1)) {
    b += "set tmargin 5\nset title offset 0,0.6\n";
    b += "set label 1 " + gq(what) + " at graph 0.5, graph 1.035 center font ',10' textcolor rgb '#444444'\n";
  }
  b += cmd + "\n";
  return s;
}

/// Grouped bars: one group of bars per value of --x (default: the model), one bar per series (--group, default:
/// the hardware), the height --y (default: tokens/s), its value written on top. Log y when the bars span 20x or more,
/// so that small models stay readable next to large ones.
Script bars_chart(const SeriesTable& t, const Resolved& r, std::ostream& log)
{
  Script s;
  const Measure m = measure_of(r.y_key);
  std::vector<std::string> cats;
  for (size_t row : r.rows)
    if (std::find(cats.begin(), cats.end(), t.cell(row, r.x_col)) == cats.end())
      cats.push_back(t.cell(row, r.x_col));
  const auto gs = groups(t, r);
  const double n = double(std::max<size_t>(1, gs.size())), slot = 0.8 / n;
  double ymin = 0, ymax = 0;
  std::vector<std::vector<std::vector<double>>> rows(gs.size());
  for (size_t g = 0; g < gs.size(); ++g)
    for (size_t row : gs[g].second) {
      const double y = need_number(t, row, r.y_col, "--y") * m.scale;
      const size_t c = size_t(std::find(cats.begin(), cats.end(), t.cell(row, r.x_col)) - cats.begin());
      if (!rows[g].empty() && rows[g].back()[4] == double(c)) {
        log << "plot: note: several rows of '" << gs[g].first << "' have " << r.x_key << " = " << cats[c]
            << "; only the first is drawn\n";
        continue;
      }
      const double x = double(c) - 0.4 + slot * (double(g) + 0.5);
      rows[g].push_back({x, y, x - 0.46 * slot, x + 0.46 * slot, double(c)});
      ymin = ymin == 0 ? y : std::min(ymin, y);
      ymax = std::max(ymax, y);
    }
  const bool logy = ymin > 0 && ymax / ymin >= 20;
  const double bottom = logy ? ymin / 3 : 0;
  std::string cmd;
  for (size_t g = 0; g < gs.size(); ++g) {
    const std::string block = "g" + std::to_string(g), ls = std::to_string(g % 10 + 1);
    s.blocks += datablock(block, rows[g]);
    cmd += (cmd.empty() ? "plot " : ", \\\n     ") + std::string("$") + block + " using 1:2:3:4:(" + num(bottom) +
           "):2 with boxxyerror fs solid 0.9 border lc rgb 'white' lc rgb '" + kSeriesColours[g % 10] + "' title " +
           gq(gs[g].first.empty() ? r.y_key : gs[g].first);
    cmd += ", \\\n     $" + block +
           " using 1:2:($2 >= 1e6 ? sprintf('%.3gM', $2 / 1e6) : $2 >= 1e3 ? sprintf('%.3gk', $2 / 1e3) : "
           "sprintf('%.3g', $2)) with labels offset 0,0.7 font ',9' textcolor rgb '#333333' notitle";
  }
  std::vector<std::string> labels;
  for (const auto& c : cats)
    labels.push_back(shorten(c));
  s.width = std::clamp(int(300 + 60 * double(gs.size()) * double(cats.size())), 900, 2400);
  int extra_px = 0;
  std::string tics = category_xtics(labels, s.width - 200, extra_px);
  const double key_px = double(gs.size()) * 19 + 16;
  s.height = int(560 + key_px) + extra_px;
  std::string& b = s.body;
  b += style_preamble();
  b += "set label 99 " + gq(r.title) + " at screen 0.5, screen " + num(1 - 28.0 / s.height) +
       " center font ',15' textcolor rgb '#111111'\n";
  b += "set tmargin at screen " + num(1 - (60 + key_px) / s.height) + "\n";
  b += "set key at screen 0.1, screen " + num(1 - 48.0 / s.height) +
       " top left vertical Left reverse box lc rgb '#CCCCCC' width 1\n";
  b += "set ylabel " + gq(m.label + (logy ? ", log scale" : "")) + "\n";
  if (logy)
    b += "set logscale y 10\nset yrange [" + num(bottom) + ":" + num(ymax * 3) + "]\n" + log_ytics(bottom, ymax * 3);
  else
    b += "set yrange [0:" + num(ymax * 1.15) + "]\n";
  b += "set format y '%g'\nset xlabel " + gq(r.x_key) + "\n";
  b += "set xrange [-0.6:" + num(double(cats.size()) - 0.4) + "]\nset grid noxtics ytics\n";
  b += tics;
  b += cmd + "\n";
  return s;
}

Script memory_chart(const SeriesTable& t, const Resolved& r, std::ostream& log)
{
  Script s;
  const double gib = 1073741824.0;
  int cap_col = t.find("memory.capacity_bytes_per_device");
  if (cap_col < 0)
    log << "plot: note: no memory.capacity_bytes_per_device column: the capacity line is left out\n";
  std::vector<std::string> labels;
  std::vector<std::vector<double>> rows;
  double ymax = 0;
  std::set<double> caps;
  bool over = false;
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const size_t row = r.rows[i];
    labels.push_back(point_label(t, r, row, i));
    double peak = need_number(t, row, r.y_col, "--y") / gib;
    double cap = cap_col >= 0 ? to_number(t.cell(row, cap_col)).value_or(NAN) / gib : NAN;
    if (std::isfinite(cap))
      caps.insert(cap);
    over = over || (std::isfinite(cap) && peak > cap);
    rows.push_back({double(i), peak, cap, peak <= cap || !std::isfinite(cap) ? peak : NAN,
                    peak > cap ? peak : NAN});
    ymax = std::max({ymax, peak, std::isfinite(cap) ? cap : 0.0});
  }
  s.blocks += datablock("m", rows);
  std::string cmd = "plot $m using 1:4:($1-0.34):($1+0.34):(0):4 with boxxyerror fs solid 0.92 border lc rgb "
                    "'white' lc rgb '#4E79A7' title 'peak memory per device'";
  if (over)
    cmd += ", \\\n     $m using 1:5:($1-0.34):($1+0.34):(0):5 with boxxyerror fs solid 0.92 border lc rgb 'white' lc "
           "rgb '#E15759' title 'peak above the capacity'";
  cmd += ", \\\n     $m using 1:2:(sprintf('%.1f GiB', $2)) with labels offset 0,0.8 font ',10' textcolor rgb "
         "'#333333' notitle";
  if (caps.size() == 1)
    cmd += ", \\\n     " + num(*caps.begin()) + " with lines lc rgb '#C0392B' dt (8,4) lw 2 title " +
           gq("capacity per device (" + format_number("%.0f", *caps.begin()) + " GiB)");
  else if (caps.size() > 1)
    cmd += ", \\\n     $m using ($1-0.45):3:(0.9):(0) with vectors nohead lc rgb '#C0392B' dt (8,4) lw 2 title "
           "'capacity per device'";
  s.width = std::clamp(int(300 + 80 * labels.size()), 800, 2400);
  int extra_px = 0;
  std::string tics = category_xtics(labels, s.width - 200, extra_px);
  s.height = 560 + extra_px;
  std::string& b = s.body;
  b += style_preamble();
  b += "set title " + gq(r.title) + "\n";
  b += "set ylabel 'memory per device (GiB)'\nset yrange [0:" + num(ymax * 1.22) + "]\nset format y '%g'\n";
  b += "set xlabel " + gq(category_xlabel(r)) + "\n";
  b += "set xrange [-0.6:" + num(double(labels.size()) - 0.4) + "]\n";
  b += "set grid noxtics ytics\n";
  b += tics;
  b += "set key top right horizontal Left reverse box lc rgb '#CCCCCC' opaque width 1\n";
  b += cmd + "\n";
  return s;
}

// ---- Running gnuplot -----------------------------------------------------------------------------------------

struct GnuplotRun {
  int rc = -1;
  std::string err;
};

GnuplotRun run_gnuplot(const fs::path& dir, const std::string& script)
{
  std::string exe = "gnuplot";
  if (const char* e = std::getenv("DTSIM_GNUPLOT"); e && *e)
    exe = e;
  else if (access("/usr/bin/gnuplot", X_OK) == 0)
    exe = "/usr/bin/gnuplot";
  GnuplotRun r;
  int fd[2];
  if (pipe(fd) != 0) {
    r.err = std::string("cannot create a pipe: ") + std::strerror(errno);
    return r;
  }
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    r.err = std::string("cannot fork: ") + std::strerror(errno);
    close(fd[0]);
    close(fd[1]);
    return r;
  }
  if (pid == 0) {
    close(fd[0]);
    dup2(fd[1], 2);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
      dup2(null, 0);
      dup2(null, 1);
    }
    if (!dir.empty() && chdir(dir.c_str()) != 0) {
      dprintf(2, "cannot enter %s: %s\n", dir.c_str(), std::strerror(errno));
      _exit(127);
    }
    execlp(exe.c_str(), exe.c_str(), script.c_str(), static_cast<char*>(nullptr));
    dprintf(2, "cannot run %s: %s\n", exe.c_str(), std::strerror(errno));
    _exit(127);
  }
  close(fd[1]);
  char buf[4096];
  ssize_t n;
  while ((n = read(fd[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0)
      r.err.append(buf, size_t(n));
  close(fd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return r;
}

std::string read_file(const std::string& path)
{
  // A pipe or a device would hang the read or fill the memory; results files are regular files.
  std::error_code ec;
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec))
    refuse(path, 0, "", "cannot read the results file: it is not a regular file (a directory, a pipe or a device)");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    refuse(path, 0, "", std::string("cannot read the results file: ") +
                            (fs::exists(path) ? "permission denied or not a file" : "no such file"));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

// ---- Public functions ----------------------------------------------------------------------------------------

void append_rows(CsvTable& into, const CsvTable& more)
{
  std::vector<size_t> at;  // column of `into` for each column of `more`
  for (const auto& name : more.columns) {
    auto it = std::find(into.columns.begin(), into.columns.end(), name);
    if (it == into.columns.end()) {
      into.columns.push_back(name);
      for (auto& row : into.rows)
        row.emplace_back();
      it = into.columns.end() - 1;
    }
    at.push_back(size_t(it - into.columns.begin()));
  }
  for (size_t r = 0; r < more.rows.size(); ++r) {
    std::vector<std::string> row(into.columns.size());
    for (size_t c = 0; c < more.rows[r].size() && c < at.size(); ++c)
      row[at[c]] = more.rows[r][c];
    into.rows.push_back(std::move(row));
    into.lines.push_back(r < more.lines.size() ? more.lines[r] : 0);
  }
}

CsvTable parse_csv(const std::string& text, const std::string& origin)
{
  std::vector<std::vector<std::string>> records;
  std::vector<int> starts;
  std::vector<std::string> rec;
  std::string field;
  int line = 1, rec_line = 1;
  bool in_quotes = false, quoted = false, after_quote = false;
  size_t i = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;  // a UTF-8 byte order mark
  auto end_field = [&] {
    rec.push_back(field);
    field.clear();
    quoted = after_quote = false;
  };
  auto end_record = [&] {
    end_field();
    if (!(rec.size() == 1 && rec[0].empty()))  // a blank line
      records.push_back(rec), starts.push_back(rec_line);
    rec.clear();
  };
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"')
          field += '"', ++i;
        else
          in_quotes = false, after_quote = true;
      } else {
        if (c == '\n')
          ++line;
        field += c;
      }
      continue;
    }
    if (c == ',') {
      end_field();
      continue;
    }
    if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n')
      continue;
    if (c == '\n' || c == '\r') {
      end_record();
      rec_line = ++line;
      continue;
    }
    if (c == '"') {
      if (field.empty() && !quoted) {
        in_quotes = quoted = true;
        continue;
      }
      refuse(origin, line, "", "a quote inside an unquoted field (quote the whole field and double its quotes)");
    }
    if (after_quote)
      refuse(origin, line, "", "text after the closing quote of a field (a field is either quoted or not)");
    field += c;
  }
  if (in_quotes)
    refuse(origin, rec_line, "", "a quoted field is not closed before the end of the file");
  if (!field.empty() || !rec.empty() || quoted)
    end_record();
  if (records.empty())
    refuse(origin, 0, "", "the file is empty: expected a header row naming the columns");
  CsvTable t;
  for (const auto& h : records[0])
    t.columns.push_back(trim(h));
  for (size_t k = 1; k < records.size(); ++k) {
    auto& r = records[k];
    if (r.size() > t.columns.size())
      refuse(origin, starts[k], "",
             "this row has " + std::to_string(r.size()) + " fields, the header " + std::to_string(t.columns.size()));
    r.resize(t.columns.size());
    t.rows.push_back(std::move(r));
    t.lines.push_back(starts[k]);
  }
  return t;
}

std::optional<AxisQuantity> parse_axis_value(const std::string& raw)
{
  const std::string text = trim(raw);
  if (auto v = to_number(text))
    return AxisQuantity{*v, ""};
  const char* begin = text.c_str();
  char* end = nullptr;
  std::strtod(begin, &end);
  if (end == begin)
    return std::nullopt;
  const std::string unit = trim(std::string(end));
  using config::Dimension;
  for (Dimension d : {Dimension::Bandwidth, Dimension::Bytes, Dimension::Time, Dimension::FlopRate, Dimension::Power}) {
    auto q = config::parse_quantity(text, d);
    if (q.value)
      return AxisQuantity{*q.value, unit};
  }
  return std::nullopt;
}

std::optional<NumericAxis> numeric_axis(const std::vector<std::string>& texts)
{
  if (texts.empty())
    return std::nullopt;
  NumericAxis a;
  std::vector<AxisQuantity> q;
  for (const auto& t : texts) {
    auto v = parse_axis_value(t);
    if (!v)
      return std::nullopt;
    q.push_back(*v);
  }
  a.unit = q.front().unit;
  if (a.unit.empty()) {
    for (const auto& v : q) {
      if (!v.unit.empty())
        return std::nullopt;
      a.values.push_back(v.si);
    }
    return a;
  }
  // the SI value of one reference unit, in the reference unit's dimension
  auto ref = parse_axis_value("1 " + a.unit);
  if (!ref || ref->si <= 0)
    return std::nullopt;
  using config::Dimension;
  std::optional<Dimension> dim;
  for (Dimension d : {Dimension::Bandwidth, Dimension::Bytes, Dimension::Time, Dimension::FlopRate, Dimension::Power})
    if (!dim && config::parse_quantity("1 " + a.unit, d).value)
      dim = d;
  for (size_t k = 0; k < q.size(); ++k) {
    if (q[k].unit.empty() || !config::parse_quantity(texts[k], *dim).value)
      return std::nullopt;  // a bare number, or another dimension
    a.values.push_back(q[k].si / ref->si);
  }
  return a;
}

/// Simulated rows whose --y cell is empty have nothing to draw: a run that never finishes has no time to train
/// (`time_to_train_s` and `goodput` are null, `time_to_train.why_not` says why). They are skipped with a note, as
/// rows that were not simulated are.
void skip_rows_without_y(SeriesTable& t, const PlotOptions& o, std::ostream& log)
{
  const int y = o.y.empty() ? -1 : t.find(o.y);
  if (y < 0)
    return;  // no --y, or an unknown column: refused with the columns' names later
  const int why_not = t.find("time_to_train.why_not");
  std::vector<size_t> kept;
  for (size_t r : t.ok) {
    if (!t.cell(r, y).empty()) {
      kept.push_back(r);
      continue;
    }
    const std::string why = why_not >= 0 ? t.cell(r, why_not) : "";
    log << "plot: skipping " << o.csv << ":" << t.line(r) << ": no " << t.csv.columns[size_t(y)]
        << (why.empty() ? "" : " (" + why + ")") << "\n";
  }
  if (kept.empty())
    refuse(o.csv, 0, "--y",
           "column '" + t.csv.columns[size_t(y)] + "' is empty in every simulated row: nothing to plot");
  t.ok = kept;
}

int plot(const PlotOptions& o, std::ostream& log)
{
  static const std::vector<std::string> kinds = {"auto", "scaling", "whatif", "breakdown", "memory", "bars"};
  if (std::find(kinds.begin(), kinds.end(), o.kind) == kinds.end())
    refuse("<command line>", 0, "--kind", "unknown kind '" + o.kind + "'; the kinds are " + config::join_list(kinds));
  SeriesTable t;
  t.file = o.csv;
  t.csv = parse_csv(read_file(o.csv), o.csv);
  for (const auto& more : o.more_csv)
    append_rows(t.csv, parse_csv(read_file(more), more));
  const int status = t.find("status");
  for (size_t r = 0; r < t.csv.rows.size(); ++r) {
    const std::string st = status >= 0 ? t.cell(r, status) : "ok";
    if (st == "ok") {
      t.ok.push_back(r);
      continue;
    }
    const int reason = t.find("reason");
    std::string why = reason >= 0 ? t.cell(r, reason) : "";
    std::replace(why.begin(), why.end(), '\n', ' ');
    if (why.size() > 200)
      why = why.substr(0, 197) + "...";
    log << "plot: skipping " << o.csv << ":" << t.line(r) << ": status " << (st.empty() ? "(empty)" : st)
        << (why.empty() ? "" : ": " + why) << "\n";
  }
  if (t.ok.empty())
    refuse(o.csv, 0, "status",
           t.csv.rows.empty() ? "the file has a header and no rows" : "no row has status ok: nothing to plot");
  skip_rows_without_y(t, o, log);

  Resolved r;
  r.rows = t.ok;
  r.varied = varied_inputs(t);
  r.kind = o.kind;
  // check the named columns first, whatever the kind
  if (!o.x.empty())
    r.x_col = t.need(o.x, "--x"), r.x_key = o.x;
  if (!o.y.empty())
    r.y_col = t.need(o.y, "--y"), r.y_key = o.y;
  if (!o.group.empty())
    r.group_cols = {t.need(o.group, "--group")}, r.group_keys = {o.group};

  std::vector<const PlotInput*> numeric;
  for (const auto& v : r.varied)
    if (numeric_axis(values_of(t, v.col, r.rows)))
      numeric.push_back(&v);
  auto varies = [&](const std::string& key) {
    return std::any_of(r.varied.begin(), r.varied.end(), [&](const PlotInput& v) { return v.key == key; });
  };
  if (r.kind == "auto") {
    std::string why;
    if (varies("devices") || o.x == "devices")
      r.kind = "scaling", why = "the devices column varies";
    else if ((!o.x.empty() && numeric_axis(values_of(t, r.x_col, r.rows)) && r.varied.size() <= 2) ||
             (o.x.empty() && numeric.size() == 1 && r.varied.size() <= 2))
      r.kind = "whatif", why = "one numeric input varies";
    else
      r.kind = "breakdown",
      why = r.varied.empty() ? "no input varies" : std::to_string(r.varied.size()) + " inputs vary";
    log << "plot: kind " << r.kind << " (" << why << ")\n";
  }

  // the other varied inputs make the series of the line charts
  // An input that moves with x (one value per x value and the reverse, as the global batch of a weak-scaling sweep
  // moves with the devices) is part of the x axis, not a series.
  auto moves_with_x = [&](int col) {
    std::map<std::string, std::string> x_to_v, v_to_x;
    for (size_t row : r.rows) {
      const std::string& x = t.cell(row, r.x_col);
      const std::string& v = t.cell(row, col);
      if (x_to_v.emplace(x, v).first->second != v || v_to_x.emplace(v, x).first->second != x)
        return false;
    }
    return true;
  };
  auto default_groups = [&](const std::string& x_key) {
    if (!r.group_cols.empty())
      return;
    for (const auto& v : r.varied)
      if (v.key != x_key && t.csv.columns[size_t(v.col)] != x_key && !moves_with_x(v.col))
        r.group_cols.push_back(v.col), r.group_keys.push_back(v.key);
  };
  std::string model;
  if (int mc = t.find("model"); mc >= 0) {
    std::set<std::string> names;
    for (size_t row : r.rows)
      names.insert(t.cell(row, mc));
    if (names.size() == 1)
      model = *names.begin() + ": ";
  }
  Script script;
  if (r.kind == "scaling") {
    if (r.x_col < 0)
      r.x_col = t.need("devices", "--x"), r.x_key = "devices";
    if (r.y_col < 0)
      r.y_col = t.need("samples_per_s", "--y"), r.y_key = "samples_per_s";
    default_groups(r.x_key);
    r.title = o.title.empty() ? model + measure_of(r.y_key).name() + " against " + r.x_key : o.title;
    script = scaling_chart(t, r, log);
  } else if (r.kind == "whatif") {
    if (r.x_col < 0) {
      if (numeric.empty())
        refuse(o.csv, 0, "--x",
               "no varied input is numeric; name the x column with --x; the columns are: " +
                   config::join_list(t.csv.columns));
      r.x_col = numeric.front()->col, r.x_key = numeric.front()->key;
    }
    if (r.y_col < 0)
      r.y_col = t.need("step_time_s", "--y"), r.y_key = "step_time_s";
    default_groups(r.x_key);
    r.title = o.title.empty() ? model + "what if " + r.x_key + " changes" : o.title;
    script = whatif_chart(t, r, log);
  } else if (r.kind == "bars") {
    // The bars compare what varies across the rows: the first varied input along x, the others as the series.
    // Without a varied input (one row, or a CSV of outputs only): the model along x, one series per hardware.
    const std::vector<PlotInput> dims = bar_dimensions(t, r.varied, r.rows);
    if (r.x_col < 0) {
      if (dims.empty())
        r.x_col = t.need("model", "--x"), r.x_key = "model";
      else
        r.x_col = dims.front().col, r.x_key = dims.front().key;
    }
    if (r.y_col < 0)
      r.y_col = t.need("tokens_per_s", "--y"), r.y_key = "tokens_per_s";
    if (r.group_cols.empty() && dims.empty())
      r.group_cols = {t.need("hardware", "--group")}, r.group_keys = {"hardware"};
    if (r.group_cols.empty())
      for (const auto& d : dims)
        if (d.col != r.x_col && !moves_with_x(d.col))
          r.group_cols.push_back(d.col), r.group_keys.push_back(d.key);
    r.title = o.title.empty() ? measure_of(r.y_key).name() + " by " + r.x_key : o.title;
    script = bars_chart(t, r, log);
  } else if (r.kind == "breakdown") {
    if (!o.y.empty())
      log << "plot: note: --y is not used by the breakdown chart (it stacks the breakdown.* columns)\n";
    r.title = o.title.empty() ? model + "where the step time goes" : o.title;
    script = breakdown_chart(t, r, log);
  } else {
    if (r.y_col < 0)
      r.y_col = t.need("memory.peak_bytes_per_device", "--y"), r.y_key = "memory.peak_bytes_per_device";
    r.title = o.title.empty() ? model + "peak memory per device" : o.title;
    script = memory_chart(t, r, log);
  }
  if (!o.group.empty() && (r.kind == "breakdown" || r.kind == "memory"))
    log << "plot: note: --group is not used by the " << r.kind << " chart (one bar per row)\n";

  // the files: PREFIX.gp, then gnuplot writes PREFIX.svg and PREFIX.png next to it
  std::string prefix = o.out_prefix;
  if (prefix.empty())
    prefix = ends_with(o.csv, ".csv") ? o.csv.substr(0, o.csv.size() - 4) : o.csv;
  const fs::path pp(prefix);
  const fs::path dir = pp.parent_path();
  const std::string name = pp.filename().string();
  if (name.empty())
    refuse("<command line>", 0, "--out", "'" + prefix + "' names a directory; give a prefix such as results/scaling");
  if (!dir.empty() && !fs::is_directory(dir))
    refuse("<command line>", 0, "--out", "the directory '" + dir.string() + "' does not exist");
  std::string gp = "# dtsim plot: " + r.kind + " chart of " + o.csv + "\n";
  gp += "# Written by `dtsim plot`; to draw it again, run `gnuplot " + name + ".gp` in this directory.\n";
  gp += "# Makes " + name + ".svg and " + name + ".png.\n\n";
  gp += script.blocks + "\n";
  const std::string W = std::to_string(script.width), H = std::to_string(script.height);
  gp += "do for [out_i = 1:2] {\n";
  gp += "if (out_i == 1) {\n";
  gp += "  set terminal svg size " + W + "," + H +
        " dynamic noenhanced font 'Sans,11' fontscale 1.3 linewidth 1.2 background rgb 'white'\n";
  gp += "  set output " + gq(name + ".svg") + "\n";
  gp += "} else {\n";
  gp += "  set terminal pngcairo size " + W + "," + H +
        " noenhanced font 'Sans,11' linewidth 1.2 background rgb 'white'\n";
  gp += "  set output " + gq(name + ".png") + "\n";
  gp += "}\n";
  gp += script.body;
  gp += "set output\n}\n";
  const fs::path gp_path = fs::path(prefix + ".gp");
  {
    std::ofstream out(gp_path, std::ios::binary | std::ios::trunc);
    out << gp;
    out.flush();
    if (!out)
      refuse("<command line>", 0, "--out", "cannot write " + gp_path.string());
  }
  std::error_code ec;
  fs::remove(prefix + ".svg", ec);
  fs::remove(prefix + ".png", ec);
  GnuplotRun g = run_gnuplot(dir, name + ".gp");
  auto size_of = [](const std::string& p) {
    std::error_code e;
    auto n = fs::file_size(p, e);
    return e ? std::uintmax_t(0) : n;
  };
  if (g.rc != 0 || size_of(prefix + ".svg") == 0 || size_of(prefix + ".png") == 0) {
    log << "plot: gnuplot failed" << (g.rc == 127 ? " (is gnuplot installed? Debian: gnuplot-nox)" : "")
        << " (exit code " << g.rc << ") on " << gp_path.string() << (g.err.empty() ? "\n" : ":\n" + g.err);
    if (!g.err.empty() && g.err.back() != '\n')
      log << "\n";
    return 1;
  }
  if (!g.err.empty())
    log << "plot: gnuplot said: " << g.err << (g.err.back() == '\n' ? "" : "\n");
  log << "plot: " << r.kind << " chart of " << r.rows.size() << " point" << (r.rows.size() == 1 ? "" : "s")
      << " in " << prefix << ".svg and " << prefix << ".png (script " << gp_path.string() << ")\n";
  return 0;
}

}  // namespace dtsim::app
