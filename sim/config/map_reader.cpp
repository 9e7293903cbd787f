#include "config/map_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <stdexcept>

#include "config/suggest.hpp"

namespace dtsim::config {

static std::string kind_of(const YAML::Node& n)
{
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Null: return "nothing (null)";
    case YAML::NodeType::Scalar: return excerpt(n.Scalar());
    default: return "nothing";
  }
}

MapReader::MapReader(const YamlFile& file, YAML::Node node, std::string path, Diagnostics& diag)
    : file_(&file), node_(node), path_(std::move(path)), diag_(&diag)
{
  if (!node_.IsDefined() || node_.IsNull())
    return;
  if (!node_.IsMap()) {
    diag_->add(file_->origin(node_, path_), path_.empty() ? "(document)" : path_,
               "expected a mapping of keys to values, got " + kind_of(node_));
    return;
  }
  valid_ = true;
  // yaml-cpp keeps duplicate keys but lookups only see the first one: report them here.
  std::map<std::string, int> first_line;
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    std::string key = it->first.Scalar();
    auto [pos, inserted] = first_line.emplace(key, it->first.Mark().line + 1);
    if (!inserted)
      diag_->add(file_->origin(it->first, path_of(key)), path_of(key),
                 "duplicate key '" + key + "' (first given at line " + std::to_string(pos->second) + ")");
  }
}

std::string MapReader::path_of(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

bool MapReader::has(const std::string& key) const { return valid_ && node_[key].IsDefined(); }

Origin MapReader::where(const std::string& key) const
{
  if (valid_) {
    YAML::Node v = node_[key];
    if (v.IsDefined())
      return file_->origin(v, path_of(key));
  }
  return where_self();
}

Origin MapReader::where_self() const { return file_->origin(node_, path_); }

void MapReader::error(const std::string& key, const std::string& message)
{
  diag_->add(where(key), path_of(key), message);
}

void MapReader::missing(const std::string& key, const std::string& expected)
{
  diag_->add(where_self(), path_of(key), "missing required key '" + key + "' (expected " + expected + ")");
}

std::optional<YAML::Node> MapReader::lookup(const std::string& key, bool required, const std::string& expected)
{
  known_.push_back(key);
  if (!valid_)
    return std::nullopt;
  YAML::Node v = node_[key];
  if (!v.IsDefined()) {
    if (required)
      missing(key, expected);
    return std::nullopt;
  }
  return v;
}

std::optional<YAML::Node> MapReader::scalar(const std::string& key, bool required, const std::string& expected)
{
  auto found = lookup(key, required, expected);
  if (!found)
    return std::nullopt;
  YAML::Node v = *found;
  if (!v.IsScalar()) {
    error(key, "expected " + expected + ", got " + kind_of(v));
    return std::nullopt;
  }
  return v;
}

namespace {

std::string range_text(IntRange r)
{
  return "an integer between " + std::to_string(r.lo) + " and " + std::to_string(r.hi);
}

// The integer of `s` when it is one within `r` (no sign of truncation: strtoll reports overflow as ERANGE).
std::optional<int64_t> parse_integer(const std::string& s, IntRange r)
{
  if (s.empty())
    return std::nullopt;
  char* end = nullptr;
  errno = 0;
  long long x = std::strtoll(s.c_str(), &end, 10);
  if (*end != '\0' || errno == ERANGE || x < r.lo || x > r.hi)
    return std::nullopt;
  return x;
}

// An integer as written (out of range, it is quoted as a number), else the text quoted.
std::string found_text(const std::string& s)
{
  const bool digits = s.size() > (s[0] == '-' ? 1u : 0u) && s.size() < 40 &&
                      s.find_first_not_of("0123456789", s[0] == '-' ? 1 : 0) == std::string::npos;
  return digits ? s : excerpt(s);
}

}  // namespace

std::optional<int64_t> MapReader::integer(const std::string& key, bool required, IntRange range)
{
  const std::string expected = range_text(range);
  auto v = scalar(key, required, expected);
  if (!v)
    return std::nullopt;
  auto x = v->Tag() == "!" ? std::nullopt : parse_integer(v->Scalar(), range);  // "!": a quoted string
  if (!x)
    error(key, "expected " + expected + ", got " +
                   (v->Tag() == "!" ? excerpt(v->Scalar()) : found_text(v->Scalar())));
  return x;
}

std::optional<std::vector<int64_t>> MapReader::integer_list(const std::string& key, bool required, IntRange range)
{
  const std::string expected =
      "a list of integers between " + std::to_string(range.lo) + " and " + std::to_string(range.hi);
  auto found = lookup(key, required, expected);
  if (!found)
    return std::nullopt;
  YAML::Node v = *found;
  if (!v.IsSequence()) {
    error(key, "expected " + expected + " (such as [7, 8, 7]), got " + kind_of(v));
    return std::nullopt;
  }
  std::vector<int64_t> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const YAML::Node item = v[i];
    auto x = item.IsScalar() ? parse_integer(item.Scalar(), range) : std::nullopt;
    if (!x) {
      const std::string item_path = path_of(key) + "[" + std::to_string(i) + "]";
      diag_->add(file_->origin(item, item_path), item_path,
                 "expected " + range_text(range) + ", got " +
                     (item.IsScalar() ? found_text(item.Scalar()) : kind_of(item)));
      return std::nullopt;
    }
    out.push_back(*x);
  }
  return out;
}

std::optional<std::vector<double>> MapReader::number_list(const std::string& key, bool required, double lo,
                                                          double hi)
{
  char expected[96];
  std::snprintf(expected, sizeof expected, "a list of numbers between %g and %g", lo, hi);
  auto found = lookup(key, required, expected);
  if (!found)
    return std::nullopt;
  YAML::Node v = *found;
  if (!v.IsSequence()) {
    error(key, std::string("expected ") + expected + " (such as [0.02, -0.01]), got " + kind_of(v));
    return std::nullopt;
  }
  std::vector<double> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const YAML::Node item = v[i];
    const std::string s = item.IsScalar() ? item.Scalar() : std::string();
    char* end = nullptr;
    double x = s.empty() ? 0 : std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0' || !std::isfinite(x) || x < lo || x > hi) {
      const std::string item_path = path_of(key) + "[" + std::to_string(i) + "]";
      char msg[128];
      std::snprintf(msg, sizeof msg, "expected a number between %g and %g, got ", lo, hi);
      diag_->add(file_->origin(item, item_path), item_path,
                 msg + kind_of(item));
      return std::nullopt;
    }
    out.push_back(x);
  }
  return out;
}

std::optional<double> MapReader::quantity(const std::string& key, Dimension d, bool required, QuantityRange range)
{
  auto v = scalar(key, required, describe(d));
  if (!v)
    return std::nullopt;
  QuantityParse q = parse_quantity(v->Scalar(), d);
  if (!q.value) {
    error(key, q.error);
    return std::nullopt;
  }
  // A finite number times its unit may still overflow to infinity ("1e308 TiB"): the range refuses it too.
  if (!std::isfinite(*q.value) || *q.value < range.lo || *q.value > range.hi) {
    error(key, std::string("expected a value between ") + range.lo_text + " and " + range.hi_text + ", got " +
                   excerpt(v->Scalar()));
    return std::nullopt;
  }
  return q.value;
}

std::optional<double> MapReader::number(const std::string& key, bool required, double lo, double hi)
{
  char range[96];
  std::snprintf(range, sizeof range, "a number between %g and %g", lo, hi);
  auto v = scalar(key, required, range);
  if (!v)
    return std::nullopt;
  const std::string& s = v->Scalar();
  char* end = nullptr;
  double x = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || v->Tag() == "!" || !std::isfinite(x)) {
    error(key, std::string("expected ") + range + ", got " + excerpt(s));
    return std::nullopt;
  }
  if (x < lo || x > hi) {
    error(key, std::string("expected ") + range + ", got " + s);
    return std::nullopt;
  }
  return x;
}

std::optional<std::string> MapReader::string(const std::string& key, bool required)
{
  auto v = scalar(key, required, "a string");
  if (!v)
    return std::nullopt;
  if (v->Scalar().empty()) {
    error(key, "expected a non-empty string, got an empty one");
    return std::nullopt;
  }
  return v->Scalar();
}

std::optional<std::string> MapReader::choice(const std::string& key, const std::vector<std::string>& allowed,
                                             bool required)
{
  std::string expected = "one of " + join_list(allowed);
  auto v = scalar(key, required, expected);
  if (!v)
    return std::nullopt;
  const std::string& s = v->Scalar();
  if (std::find(allowed.begin(), allowed.end(), s) != allowed.end())
    return s;
  std::string hint = closest(s, allowed);
  error(key, "expected " + expected + ", got " + excerpt(s) + (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
  return std::nullopt;
}

std::optional<bool> MapReader::boolean(const std::string& key, bool required)
{
  auto v = scalar(key, required, "true or false");
  if (!v)
    return std::nullopt;
  const std::string& s = v->Scalar();
  if (s == "true" || s == "on" || s == "yes" || s == "True")
    return true;
  if (s == "false" || s == "off" || s == "no" || s == "False")
    return false;
  error(key, "expected true or false, got " + excerpt(s));
  return std::nullopt;
}

MapReader MapReader::map(const std::string& key, bool required)
{
  known_.push_back(key);
  YAML::Node v = valid_ ? node_[key] : YAML::Node();
  if (valid_ && !v.IsDefined() && required)
    missing(key, "a mapping");
  return MapReader(*file_, v, path_of(key), *diag_);
}

void MapReader::accept(const std::vector<std::string>& keys) { known_.insert(known_.end(), keys.begin(), keys.end()); }

std::vector<std::string> MapReader::unread_keys() const
{
  std::vector<std::string> unread;
  if (!valid_)
    return unread;
  for (auto it = node_.begin(); it != node_.end(); ++it)
    if (std::find(known_.begin(), known_.end(), it->first.Scalar()) == known_.end())
      unread.push_back(it->first.Scalar());
  return unread;
}

void MapReader::finish()
{
  if (!valid_)
    return;
  std::vector<std::string> allowed = known_;
  std::sort(allowed.begin(), allowed.end());
  allowed.erase(std::unique(allowed.begin(), allowed.end()), allowed.end());
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    std::string key = it->first.Scalar();
    if (std::binary_search(allowed.begin(), allowed.end(), key))
      continue;
    std::string hint = closest(key, allowed);
    diag_->add(file_->origin(it->first, path_of(key)), path_of(key),
               "unknown key '" + key + "'" + (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
                   " (allowed: " + join_list(allowed) + ")");
  }
}

static const Key& of_type(const Key& k, KeyType t)
{
  if (k.type != t)
    throw std::logic_error("key '" + k.name + "' is declared as another type than it is read as");
  return k;
}

std::optional<int64_t> MapReader::integer(const Key& k)
{
  return integer(k.name, of_type(k, KeyType::Integer).required(), k.int_range);
}

std::optional<double> MapReader::quantity(const Key& k)
{
  return quantity(k.name, of_type(k, KeyType::Quantity).dimension, k.required(), k.quantity_range);
}

std::optional<double> MapReader::number(const Key& k)
{
  return number(k.name, of_type(k, KeyType::Number).required(), k.lo, k.hi);
}

std::optional<std::string> MapReader::string(const Key& k)
{
  return string(k.name, of_type(k, KeyType::String).required());
}

std::optional<std::string> MapReader::choice(const Key& k)
{
  auto v = choice(k.name, of_type(k, KeyType::Choice).choices, k.required());
  if (!v && !k.default_choice.empty() && !has(k.name))
    return k.default_choice;
  return v;
}

std::optional<std::vector<int64_t>> MapReader::integer_list(const Key& k)
{
  return integer_list(k.name, of_type(k, KeyType::IntegerList).required(), k.int_range);
}

std::optional<std::vector<double>> MapReader::number_list(const Key& k)
{
  return number_list(k.name, of_type(k, KeyType::NumberList).required(), k.lo, k.hi);
}

std::optional<bool> MapReader::boolean(const Key& k)
{
  return boolean(k.name, of_type(k, KeyType::Boolean).required());
}

MapReader MapReader::map(const Key& k) { return map(k.name, of_type(k, KeyType::Section).required()); }

double MapReader::value(const Key& k)
{
  const double absent = k.default_value.value_or(0.0);
  switch (k.type) {
    case KeyType::Integer: return double(integer(k).value_or(int64_t(absent)));
    case KeyType::Number: return number(k).value_or(absent);
    case KeyType::Quantity: return quantity(k).value_or(absent);
    default: throw std::logic_error("key '" + k.name + "' is not numeric");
  }
}

}  // namespace dtsim::config
