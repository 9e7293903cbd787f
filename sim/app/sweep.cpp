#include "app/sweep.hpp"

#include <pthread.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/child_process.hpp"
#include "app/derived_inputs.hpp"
#include "app/mpi_workers.hpp"
#include "app/progress.hpp"
#include "app/simulate.hpp"
#include "config/units.hpp"
#include "core/diagnostics.hpp"
#include "report/run_record.hpp"
#include "scenario/scenario_spec.hpp"

namespace dtsim::app {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kMaxPoints = 1000000;
constexpr size_t kMaxValues = 100000;

[[noreturn]] void refuse(const std::string& origin, const std::string& key, const std::string& message)
{
  throw ConfigError({Diagnostic{Origin{origin, 0, 0}, key, message}});
}

std::string trim_whitespace(const std::string& s)
{
  size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos)
    return "";
  size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

// "<integer>[ <unit>]": the integer and the unit text ("" when none); nullopt when it does not start with an integer.
std::optional<std::pair<int64_t, std::string>> integer_with_unit(const std::string& text)
{
  std::string t = trim_whitespace(text);
  size_t i = 0;
  if (i < t.size() && (t[i] == '-' || t[i] == '+'))
    ++i;
  size_t digits = i;
  while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i])))
    ++i;
  if (i == digits || i - digits > 18)
    return std::nullopt;
  int64_t v = std::stoll(t.substr(0, i));
  std::string unit = trim_whitespace(t.substr(i));
  if (!unit.empty() && !std::isalpha(static_cast<unsigned char>(unit[0])))
    return std::nullopt;
  return std::make_pair(v, unit);
}

bool known_unit(const std::string& unit)
{
  using config::Dimension;
  for (Dimension d : {Dimension::Time, Dimension::Bytes, Dimension::Bandwidth, Dimension::FlopRate, Dimension::Power})
    if (config::parse_quantity("1 " + unit, d).value)
      return true;
  return false;
}

// One range item: "A..BxF", "A..B+S" or "A..B" (step +1), integers, optionally with one unit.
std::vector<std::string> expand_range(const std::string& item, const std::string& origin)
{
  const std::string form = "expected a range A..BxF (multiply by F) or A..B+S (add S) with integers A <= B, got '" +
                           item + "'";
  size_t dots = item.find("..");
  std::string left = item.substr(0, dots), right = item.substr(dots + 2);
  char op = '+';
  int64_t step = 1;
  std::string step_unit;
  size_t at = right.find_last_of("x+");
  if (at != std::string::npos) {
    op = right[at];
    auto s = integer_with_unit(right.substr(at + 1));
    if (!s || right.substr(at + 1).find_first_of("+-") != std::string::npos)
      refuse(origin, "", form);
    step = s->first;
    step_unit = s->second;
    right = right.substr(0, at);
  }
  auto a = integer_with_unit(left), b = integer_with_unit(right);
  if (!a || !b)
    refuse(origin, "", form);
  std::string unit;
  for (const std::string& u : {a->second, b->second, step_unit}) {
    if (u.empty())
      continue;
    if (!unit.empty() && u != unit)
      refuse(origin, "", "expected one unit in the range '" + item + "', got '" + unit + "' and '" + u + "'");
    unit = u;
  }
  if (!unit.empty() && !known_unit(unit))
    refuse(origin, "", "unknown unit '" + unit + "' in the range '" + item +
                           "': expected a unit of time, bytes, bandwidth, FLOP/s or power such as 'GB/s'");
  const int64_t lo = a->first, hi = b->first;
  if (lo > hi)
    refuse(origin, "", form + " (the start is above the end)");
  if (op == 'x' && (step < 2 || lo < 1))
    refuse(origin, "", "expected a factor of at least 2 and a positive start in the range '" + item + "'");
  if (op == '+' && step < 1)
    refuse(origin, "", "expected a step of at least 1 in the range '" + item + "'");
  std::vector<std::string> out;
  for (int64_t v = lo; v <= hi;) {
    out.push_back(std::to_string(v) + (unit.empty() ? "" : " " + unit));
    if (out.size() > kMaxValues)
      refuse(origin, "", "the range '" + item + "' has more than " + std::to_string(kMaxValues) + " values");
    if (op == 'x' ? v > hi / step : v > hi - step)
      break;
    v = op == 'x' ? v * step : v + step;
  }
  return out;
}

// A file path ("../hardware/dgx-h100.yaml") is a value, never a range, though it may hold "..". A range starts with
// its integer start, and its unit may hold '/' ("100..400+100 GB/s"), so a path is told by its start or its ending.
bool looks_like_path(const std::string& item)
{
  auto ends_with = [&](const std::string& tail) {
    return item.size() >= tail.size() && item.compare(item.size() - tail.size(), tail.size(), tail) == 0;
  };
  return item[0] == '/' || item.rfind("./", 0) == 0 || item.rfind("../", 0) == 0 || ends_with(".yaml") ||
         ends_with(".yml") || ends_with(".json");
}

std::vector<std::string> expand_values_at(const std::string& spec, const std::string& origin)
{
  std::vector<std::string> out;
  if (trim_whitespace(spec).empty())
    refuse(origin, "", "expected a list of values after '=' (V1,V2,... or a range such as 8..64x2), got nothing");
  std::stringstream ss(spec);
  for (std::string item; std::getline(ss, item, ',');) {
    item = trim_whitespace(item);
    if (item.empty())
      refuse(origin, "", "expected a value between the commas of '" + spec + "', got an empty one");
    if (item.find("..") != std::string::npos && !looks_like_path(item)) {
      auto r = expand_range(item, origin);
      out.insert(out.end(), r.begin(), r.end());
    } else {
      out.push_back(item);
    }
  }
  if (!spec.empty() && spec.back() == ',')
    refuse(origin, "", "expected a value after the last comma of '" + spec + "'");
  std::set<std::string> seen;
  for (const auto& v : out)
    if (!seen.insert(v).second)
      refuse(origin, "", "the value '" + v + "' is listed twice: each point of a sweep must be different");
  return out;
}

struct Axis {
  std::string key, origin;
  std::vector<std::string> values;
  bool linked = false;  ///< takes the value at the same position as the axis before it (";" in one --vary)
};

// Point i of the product: the first --vary is the outermost loop, the last one the innermost; a linked axis is no
// loop of its own.
std::vector<size_t> digits_of(uint64_t index, const std::vector<Axis>& axes)
{
  std::vector<size_t> d(axes.size());
  for (size_t k = axes.size(); k-- > 0;) {
    if (axes[k].linked)
      continue;
    d[k] = size_t(index % axes[k].values.size());
    index /= axes[k].values.size();
  }
  for (size_t k = 1; k < axes.size(); ++k)
    if (axes[k].linked)
      d[k] = d[k - 1];
  return d;
}

// With several scenario files, the outermost axis: its values are the files, not a key to set.
constexpr const char* kScenarioAxis = "scenario";

// The overrides of point `index`: the sweep's --unset entries (`unsets`), then the point's values.
std::vector<std::string> overrides_of(uint64_t index, const std::vector<Axis>& axes,
                                      const std::vector<std::string>& unsets)
{
  auto d = digits_of(index, axes);
  std::vector<std::string> o = unsets;
  for (size_t k = 0; k < axes.size(); ++k)
    if (axes[k].key != kScenarioAxis)
      o.push_back(axes[k].key + "=" + axes[k].values[d[k]]);
  return o;
}

std::string scenario_of(uint64_t index, const std::vector<Axis>& axes, const std::string& only)
{
  if (axes.empty() || axes.front().key != kScenarioAxis)
    return only;
  return axes.front().values[digits_of(index, axes).front()];
}

json vary_of(uint64_t index, const std::vector<Axis>& axes)
{
  auto d = digits_of(index, axes);
  json v = json::object();
  for (size_t k = 0; k < axes.size(); ++k)
    v[axes[k].key] = axes[k].values[d[k]];
  return v;
}

std::string dump_line(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// The row of one point; runs in a child process (one SimGrid engine per point).
json compute_row(const std::string& scenario, uint64_t index, const std::vector<Axis>& axes,
                 const std::vector<std::string>& unsets, bool quiet)
{
  json row;
  row["point"] = index;
  row["vary"] = vary_of(index, axes);
  try {
    auto spec = load_with_file_keys(scenario, overrides_of(index, axes, unsets), quiet);
    auto report = simulate(spec, false);
    const report::RunRecord run = report::make_record(report);
    row["status"] = report.simulated ? "ok" : "does-not-fit";
    row["reason"] = report.simulated ? "" : report.why_not_fitting;
    for (auto it = run.document.begin(); it != run.document.end(); ++it)
      row[it.key()] = it.value();
  } catch (const ConfigError& e) {
    row["status"] = "input-error";
    row["reason"] = e.what();
  } catch (const std::exception& e) {
    row["status"] = "error";
    row["reason"] = std::string("internal error: ") + e.what();
  }
  return row;
}

// A row read back from a file: its point's identity (the varied values) and its text.
struct StoredRow {
  std::string identity, line;
};

std::optional<StoredRow> parse_row(const std::string& line)
{
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("vary") || !j["vary"].is_object() || !j.contains("status"))
    return std::nullopt;
  return StoredRow{dump_line(j["vary"]), line};
}

std::vector<StoredRow> read_rows(const fs::path& p)
{
  std::vector<StoredRow> rows;
  std::ifstream in(p, std::ios::binary);
  for (std::string line; std::getline(in, line);)
    if (auto r = parse_row(line))  // a line cut short by a stop does not parse: the point is computed again
      rows.push_back(*r);
  return rows;
}

std::string read_text(const fs::path& p)
{
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Flattens a row for the CSV: nested keys joined with '.', arrays left out.
void flatten(const json& j, const std::string& prefix, std::vector<std::pair<std::string, std::string>>& out)
{
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
    const json& v = it.value();
    if (v.is_object())
      flatten(v, key, out);
    else if (v.is_array())
      continue;
    else if (v.is_string())
      out.push_back({key, v.get<std::string>()});
    else if (v.is_null())
      out.push_back({key, ""});
    else
      out.push_back({key, dump_line(v)});
  }
}

std::string csv_cell(const std::string& s)
{
  if (s.find_first_of(",\"\n\r") == std::string::npos)
    return s;
  std::string q = "\"";
  for (char c : s)
    q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

void write_file_atomically(const fs::path& p, const std::string& text, const std::string& origin)
{
  fs::path tmp = p;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out)
      refuse(origin, "", "cannot write " + tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec)
    refuse(origin, "", "cannot write " + p.string() + ": " + ec.message());
}



// The rows the children wrote into `points_dir` (POINTS/<index>.json) as JSON lines; their files are removed.
std::vector<std::string> take_finished_rows(const fs::path& points_dir)
{
  std::vector<std::pair<uint64_t, fs::path>> found;
  std::error_code ec;
  for (fs::directory_iterator it(points_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const auto& p = it->path();
    if (p.extension() != ".json")
      continue;
    try {
      found.push_back({std::stoull(p.stem().string()), p});
    } catch (const std::exception&) {
    }
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> rows;
  for (const auto& [index, p] : found) {
    std::string text = read_text(p);
    if (!text.empty() && text.back() == '\n')
      text.pop_back();
    if (parse_row(text))
      rows.push_back(text);
    fs::remove(p, ec);
  }
  return rows;
}

// The work of one point, run in a child process: it writes the row to POINTS/<index>.json through a rename, so
// that a file seen there is complete.
std::function<std::vector<double>()> point_job(const SweepOptions& o, const std::vector<Axis>& axes, uint64_t index,
                                               const fs::path& points_dir)
{
  return [&o, &axes, index, points_dir]() {
    json row = compute_row(scenario_of(index, axes, o.scenario), index, axes, o.unsets, o.quiet);
    fs::path tmp = points_dir / (std::to_string(index) + ".json.tmp");
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out << dump_line(row) << '\n';
      out.flush();
      if (!out)
        return std::vector<double>{};  // the parent records the point as failed
    }
    fs::rename(tmp, points_dir / (std::to_string(index) + ".json"));
    return std::vector<double>{1.0};
  };
}

// The mutex of the running Ticker, held across every fork() (see Ticker).
std::mutex* forking_ticker_mu = nullptr;

// Calls `tick` on a helper thread every 100 ms, and once more when stopped, while the calling thread waits for the
// children in run_in_children. fork() copies only the calling thread: a child forked while the helper was inside
// malloc (parsing or writing a row) would inherit the allocator's lock held and block on its first allocation
// (issue 14: sweeps hung under AddressSanitizer, whose allocator takes no lock around fork). The helper ticks
// holding mu_, so holding mu_ across fork keeps it out of everything while the child is made.
class Ticker {
 public:
  explicit Ticker(std::function<void()> tick) : tick_(std::move(tick))
  {
    static const int registered = pthread_atfork(
        [] { if (forking_ticker_mu) forking_ticker_mu->lock(); },
        [] { if (forking_ticker_mu) forking_ticker_mu->unlock(); },
        [] { if (forking_ticker_mu) forking_ticker_mu->unlock(); });
    (void)registered;
    forking_ticker_mu = &mu_;
    thread_ = std::thread([this]() { loop(); });
  }
  ~Ticker() { stop(); }
  void stop()
  {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable())
      thread_.join();
    forking_ticker_mu = nullptr;
  }

 private:
  void loop()
  {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      tick_();
      if (stop_)
        return;
      cv_.wait_for(lock, std::chrono::milliseconds(100));
    }
  }

  std::function<void()> tick_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;  // started in the constructor, once the members above exist
};

// A rank other than 0 under mpirun: simulates its share of the pending points in a private directory and sends each
// row to rank 0 as it finishes. A point whose child ended without a row is recorded as failed by rank 0.
void run_as_worker(const SweepOptions& o, const std::vector<Axis>& axes, const std::vector<uint64_t>& pending,
                   const MpiWorld& world)
{
  std::string dir = (fs::temp_directory_path() / "dtsim-sweep-rank-XXXXXX").string();
  if (!mkdtemp(dir.data()))
    throw std::runtime_error("cannot create a temporary directory for the points of rank " +
                             std::to_string(world.rank));
  const fs::path points_dir = dir;
  std::vector<std::function<std::vector<double>()>> work;
  for (size_t k : share_of(pending.size(), world))
    work.push_back(point_job(o, axes, pending[k], points_dir));
  {
    // The helper thread is the only one that calls MPI until it stops.
    Ticker sender([&]() {
      for (const auto& row : take_finished_rows(points_dir))
        send_line_to_root(row);
    });
    run_in_children(work, o.jobs);
  }
  send_done_to_root();
  std::error_code ec;
  fs::remove_all(points_dir, ec);
}

}  // namespace

std::vector<std::string> expand_values(const std::string& spec) { return expand_values_at(spec, "--vary " + spec); }

namespace {

void log_if(bool yes, std::ostream& log, const std::string& text)
{
  if (yes)
    log << text << std::flush;
}

// Rank 0 (or the only process): reads the rows already there, runs its share of the missing points, gathers the
// other ranks' rows and writes the files. `shared_work` is set once the other ranks were told the pending points.
int run_as_root(const SweepOptions& o, const std::vector<Axis>& axes, uint64_t total, std::ostream& log,
                const MpiWorld& world, bool& shared_work)
{
  // 4. The files, and the rows already computed by a stopped or finished run of the same sweep.
  const std::string prefix =
      o.out_prefix.empty() ? fs::path(o.scenario).stem().string() + "-sweep" : o.out_prefix;
  const std::string out_origin = "--out " + prefix;
  const fs::path csv_path = prefix + ".csv", jsonl_path = prefix + ".jsonl", journal_path = prefix + ".partial.jsonl",
                 points_dir = prefix + ".points";
  std::map<std::string, uint64_t> index_of;
  for (uint64_t i = 0; i < total; ++i)
    index_of[dump_line(vary_of(i, axes))] = i;
  std::map<uint64_t, std::string> rows;  // point index -> JSONL line
  std::vector<std::string> leftovers;    // complete rows of a stopped run not yet in the journal
  size_t foreign = 0;
  std::string foreign_example;
  auto take = [&](const StoredRow& r) {
    auto it = index_of.find(r.identity);
    if (it == index_of.end()) {
      if (foreign++ == 0)
        foreign_example = r.identity;
      return false;
    }
    return rows.emplace(it->second, r.line).second;
  };
  for (const auto& r : read_rows(jsonl_path))
    take(r);
  for (const auto& r : read_rows(journal_path))
    take(r);
  std::error_code ec;
  for (fs::directory_iterator it(points_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const auto& p = it->path();
    if (p.extension() == ".json") {
      std::string text = read_text(p);
      if (!text.empty() && text.back() == '\n')
        text.pop_back();
      if (auto r = parse_row(text); r && take(*r))
        leftovers.push_back(r->line);
    }
  }
  if (foreign > 0)
    refuse(out_origin, "",
           std::to_string(foreign) + " row(s) of " + prefix + ".jsonl / .partial.jsonl are not points of this sweep (" +
               "for example " + foreign_example + "): resume with the same scenario and --vary arguments, or " +
               "choose another --out");
  {
    std::error_code ec;
    fs::path dir = fs::path(prefix).parent_path();
    if (!dir.empty())
      fs::create_directories(dir, ec);
    fs::create_directories(points_dir, ec);
    if (!fs::is_directory(points_dir))
      refuse(out_origin, "", "cannot create the directory " + points_dir.string());
  }

  std::ofstream journal;
  {
    std::string old = read_text(journal_path);
    journal.open(journal_path, std::ios::binary | std::ios::app);
    if (!journal)
      refuse(out_origin, "", "cannot write " + journal_path.string());
    if (!old.empty() && old.back() != '\n')
      journal << '\n';  // a line cut short by a stop stays alone on its line (and is ignored)
    for (const auto& l : leftovers)
      journal << l << '\n';
    journal.flush();
  }
  // Files in the points directory are either in the journal now or stale: start it empty.
  if (fs::is_directory(points_dir, ec))
    for (const auto& entry : fs::directory_iterator(points_dir))
      fs::remove(entry.path(), ec);

  std::vector<uint64_t> pending;
  for (uint64_t i = 0; i < total; ++i)
    if (!rows.count(i))
      pending.push_back(i);
  if (!o.quiet) {
    log << "sweep: " << total << " point" << (total == 1 ? "" : "s") << " (";
    for (size_t k = 0; k < axes.size(); ++k)
      log << (axes[k].linked ? " with " + axes[k].key : (k ? " x " : "") + axes[k].key + ": " +
                                                             std::to_string(axes[k].values.size()));
    log << ")";
    if (!rows.empty())
      log << ", " << rows.size() << " already done in " << prefix << ".*";
    log << ", " << pending.size() << " to run, " << o.jobs << " at a time\n";
    log.flush();
  }

  // 5. The points, in child processes (under mpirun, this rank's share; the other ranks send their rows). A helper
  // thread appends the finished rows to the journal (flushed) and draws the progress while run_in_children waits.
  if (world.size > 1)
    log_if(!o.quiet, log, "sweep: " + std::to_string(world.size) + " MPI ranks share the points, each with " +
                              std::to_string(o.jobs) + " at a time\n");
  shared_work = true;
  broadcast_from_root(pending);
  const auto start = Clock::now();
  Progress progress(log, o.quiet, total, rows.size(), "sweep", "points");
  std::set<uint64_t> waiting(pending.begin(), pending.end());
  uint64_t done = 0;
  auto record = [&](const std::string& text) {
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.contains("point") || !j["point"].is_number_unsigned())
      return;
    const uint64_t index = j["point"].get<uint64_t>();
    if (!waiting.erase(index))
      return;
    journal << text << '\n';
    journal.flush();
    rows[index] = text;
    ++done;
  };
  bool others_running = world.size > 1;
  auto collect_finished = [&](bool wait_for_others) {
    for (const auto& text : take_finished_rows(points_dir))
      record(text);
    if (others_running) {
      std::vector<std::string> lines;
      others_running = receive_lines(lines, wait_for_others);
      for (const auto& text : lines)
        record(text);
    }
  };
  std::vector<size_t> mine = share_of(pending.size(), world);
  std::vector<std::function<std::vector<double>()>> work;
  for (size_t k : mine)
    work.push_back(point_job(o, axes, pending[k], points_dir));
  std::vector<std::optional<std::vector<double>>> results;
  {
    Ticker helper([&]() {
      collect_finished(false);
      progress.update(done);
    });
    results = run_in_children(work, o.jobs);
  }
  collect_finished(false);
  while (others_running) {
    collect_finished(true);
    progress.update(done);
  }
  // A child that ended without a row (a crash): the point is recorded as failed.
  std::map<uint64_t, bool> wrote_nothing;  // point -> its process said it could not write its row
  for (size_t k = 0; k < mine.size(); ++k)
    wrote_nothing[pending[mine[k]]] = bool(results[k]);
  for (uint64_t index : pending) {
    if (rows.count(index))
      continue;
    json row;
    row["point"] = index;
    row["vary"] = vary_of(index, axes);
    row["status"] = "error";
    row["reason"] = wrote_nothing[index]
                        ? "the simulation process could not write its row in " + points_dir.string()
                        : "the simulation process ended without a result (a crash or an internal error)";
    rows[index] = dump_line(row);
    journal << rows[index] << '\n';
    journal.flush();
    ++done;
  }
  if (!pending.empty())
    progress.update(done, true);
  progress.finish();

  // 6. The final files, sorted by point index (identical whatever the number of jobs and the stops on the way).
  std::string jsonl;
  std::vector<std::vector<std::pair<std::string, std::string>>> flat;
  std::vector<std::string> columns;
  std::set<std::string> seen;
  std::map<std::string, size_t> statuses;
  for (const auto& [index, line] : rows) {
    jsonl += line + "\n";
    json j = json::parse(line);
    statuses[j.value("status", std::string("?"))]++;
    flat.emplace_back();
    flatten(j, "", flat.back());
    for (const auto& [key, value] : flat.back())
      if (seen.insert(key).second)
        columns.push_back(key);
  }
  std::string csv;
  for (size_t c = 0; c < columns.size(); ++c)
    csv += (c ? "," : "") + csv_cell(columns[c]);
  csv += "\n";
  for (const auto& r : flat) {
    std::map<std::string, const std::string*> cells;
    for (const auto& [key, value] : r)
      cells[key] = &value;
    for (size_t c = 0; c < columns.size(); ++c) {
      auto it = cells.find(columns[c]);
      csv += (c ? "," : "") + (it == cells.end() ? std::string() : csv_cell(*it->second));
    }
    csv += "\n";
  }
  write_file_atomically(jsonl_path, jsonl, out_origin);
  write_file_atomically(csv_path, csv, out_origin);
  journal.close();
  fs::remove(journal_path, ec);
  fs::remove(points_dir, ec);  // empty by now; left alone otherwise

  if (!o.quiet) {
    const double wall = std::chrono::duration<double>(Clock::now() - start).count();
    char b[64];
    std::snprintf(b, sizeof b, "%.1f s", wall);
    log << "sweep: ran " << done << " point" << (done == 1 ? "" : "s") << " in " << b << "; " << rows.size()
        << " rows (";
    bool first = true;
    for (const auto& [status, n] : statuses) {
      log << (first ? "" : ", ") << n << " " << status;
      first = false;
    }
    log << ") in " << csv_path.string() << " and " << jsonl_path.string() << "\n";
    log.flush();
  }
  return 0;
  return 0;
}

}  // namespace


int sweep(const SweepOptions& o, std::ostream& log)
{
  // 1. The axes, refused before anything runs when empty, contradictory or malformed.
  if (o.vary.empty() && o.more_scenarios.empty())
    refuse("--vary", "", "expected at least one --vary KEY=V1,V2,... or several scenario files: a sweep must vary "
                         "something");
  std::vector<Axis> axes;
  std::map<std::string, std::string> first_origin;
  uint64_t total = 1;
  if (!o.more_scenarios.empty()) {
    Axis a{kScenarioAxis, "scenario files", {o.scenario}};
    for (const auto& f : o.more_scenarios) {
      if (std::find(a.values.begin(), a.values.end(), f) != a.values.end())
        refuse(f, "", "the scenario file is given twice: each point of a sweep must be different");
      a.values.push_back(f);
    }
    total = a.values.size();
    axes.push_back(std::move(a));
  }
  for (const auto& whole : o.vary) {
    const std::string origin = "--vary " + whole;
    // "KEY=V1,V2;KEY2=W1,W2": KEY2 moves with KEY (weak scaling: devices with the global batch).
    std::stringstream parts(whole);
    bool first_part = true;
    for (std::string v; std::getline(parts, v, ';'); first_part = false) {
      auto eq = v.find('=');
      if (eq == std::string::npos)
        refuse(origin, "", "expected KEY=V1,V2,... (a dotted scenario key such as parallel.tp), got '" + v + "'");
      Axis a;
      a.key = trim_whitespace(v.substr(0, eq));
      a.origin = origin;
      if (a.key.empty())
        refuse(origin, "", "expected KEY=V1,V2,... with a dotted scenario key such as parallel.tp, got an empty key");
      if (a.key == kScenarioAxis)
        refuse(origin, a.key, "not a key of the scenario: to sweep over scenarios, give their files one after the "
                              "other (dtsim sweep A.yaml B.yaml ...)");
      if (first_origin.count(a.key))
        refuse(origin, a.key,
               "varied twice (also by " + first_origin[a.key] + "): a key takes one list of values in a sweep");
      for (const auto& [other, other_origin] : first_origin) {
        // A mapping and a key inside it: the inner value would be set twice at every point.
        if (a.key.rfind(other + ".", 0) == 0 || other.rfind(a.key + ".", 0) == 0)
          refuse(origin, a.key,
                 "varied together with " + other + " (" + other_origin + "), which " +
                     (a.key.size() > other.size() ? "contains it" : "it contains") +
                     ": the same key would be set twice at every point");
        // dp follows from the devices: a product of both holds only the points where dp = devices / (tp x pp).
        if (((a.key == "devices" && other == "parallel.dp") || (a.key == "parallel.dp" && other == "devices")) &&
            other_origin != origin)
          refuse(origin, a.key,
                 "varied together with " + other + " (" + other_origin + "): parallel.dp is determined by devices / "
                 "(tp x pp), so most points of the product would contradict it; vary devices alone (dp follows, "
                 "when the scenario does not set it) or parallel.dp with fixed devices");
      }
      first_origin[a.key] = origin;
      a.values = expand_values_at(v.substr(eq + 1), origin);
      a.linked = !first_part;
      if (a.linked && a.values.size() != axes.back().values.size())
        refuse(origin, a.key,
               "expected as many values as " + axes.back().key + " (" + std::to_string(axes.back().values.size()) +
                   "), with which it moves, got " + std::to_string(a.values.size()));
      if (!a.linked && total > kMaxPoints / a.values.size())
        refuse(origin, a.key, "the sweep has more than " + std::to_string(kMaxPoints) + " points");
      if (!a.linked)
        total *= a.values.size();
      axes.push_back(std::move(a));
    }
  }
  if (o.jobs < 1)
    refuse("--jobs", "", "expected at least 1 job, got " + std::to_string(o.jobs));

  // 2. The scenarios and the keys: the first point of each scenario must not name an unknown key.
  std::vector<std::string> files{o.scenario};
  files.insert(files.end(), o.more_scenarios.begin(), o.more_scenarios.end());
  for (const auto& file : files) {
    std::error_code ec;
    if (!fs::is_regular_file(file, ec))
      refuse(file, "", "cannot read file: it does not exist or is not a readable file");
    try {
      load_with_file_keys(file, overrides_of(0, axes, o.unsets), o.quiet);
    } catch (const ConfigError& e) {
      std::vector<Diagnostic> unknown;
      for (const auto& d : e.items()) {
        if (d.where.file == file && d.key_path.empty())
          throw;  // the scenario itself does not load (malformed YAML): no point could run
        if (d.where.file.rfind("<command line> --unset ", 0) == 0)
          throw;  // a key the file does not give: the same at every point
        for (const auto& a : axes) {
          // A key of the model or hardware file is reported by that file's loader without the prefix.
          const std::string key = is_file_key(a.key) ? a.key.substr(a.key.find('.') + 1) : a.key;
          const bool names_key = !d.key_path.empty() && (key == d.key_path || key.rfind(d.key_path + ".", 0) == 0);
          const bool set_of_key = d.where.file.rfind("<command line> --set " + a.key + "=", 0) == 0;
          if ((names_key && d.message.rfind("unknown key", 0) == 0) ||
              (set_of_key && (d.message.find("cannot be set") != std::string::npos ||
                              d.message.find("dotted key") != std::string::npos)))
            unknown.push_back({Origin{a.origin, 0, 0}, a.key, "not a key of the scenario: " + d.message});
        }
      }
      if (!unknown.empty())
        throw ConfigError(unknown);
      // Any other problem is particular to this point: it is recorded in its row like any failing point.
    }
  }


  // 2b. A value without its unit, or with a unit of another quantity, is wrong whatever the other keys: refused
  // before anything runs, not recorded as an input-error row at every point that takes it ('--vary
  // resilience.checkpoint_bandwidth=1,2' once ran a whole sweep of failing points).
  std::vector<Diagnostic> unitless;
  for (const auto& a : axes) {
    if (a.key == kScenarioAxis)
      continue;
    for (const auto& value : a.values) {
      std::vector<std::string> overrides = o.unsets;
      overrides.push_back(a.key + "=" + value);
      try {
        load_with_file_keys(o.scenario, overrides, true);
      } catch (const ConfigError& e) {
        for (const auto& d : e.items())
          if (d.where.file == "<command line> --set " + a.key + "=" + value &&
              (d.message.find("(units are mandatory)") != std::string::npos ||
               d.message.rfind("unknown unit ", 0) == 0))
            unitless.push_back({Origin{a.origin, 0, 0}, a.key, d.message});
      }
    }
  }
  if (!unitless.empty())
    throw ConfigError(unitless);

  // 3. Under mpirun rank 0 alone reads and writes the files and tells the other ranks which points are left.
  const MpiWorld world = mpi_world();
  if (!world.root()) {
    auto pending = broadcast_from_root(std::nullopt);
    if (!pending)
      return 2;  // rank 0 refused the sweep and says why
    run_as_worker(o, axes, *pending, world);
    return 0;
  }
  bool shared_work = false;
  try {
    return run_as_root(o, axes, total, log, world, shared_work);
  } catch (...) {
    if (!shared_work)
      broadcast_from_root(std::nullopt);  // the other ranks stop too
    throw;
  }
}

}  // namespace dtsim::app
