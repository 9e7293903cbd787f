#include "config/yaml_file.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "config/input_file.hpp"
#include "config/suggest.hpp"
#include "config/text.hpp"

namespace dtsim::config {

namespace {

// Line (1-based) of offset `pos` in `text`.
int line_of(const std::string& text, size_t pos)
{
  return 1 + int(std::count(text.begin(), text.begin() + std::min(pos, text.size()), '\n'));
}

// The first quoted scalar under `node` whose closing quote is missing. yaml-cpp takes the end of the file as the
// end of such a scalar: `name: "x` would swallow every key after it, which then reads as "missing required key"
// errors that say nothing about the quote.
std::optional<YAML::Mark> unclosed_quote(const YAML::Node& node, const std::string& text)
{
  if (node.IsMap() || node.IsSequence()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      std::optional<YAML::Mark> at;
      if (node.IsMap() && !(at = unclosed_quote(it->first, text)))
        at = unclosed_quote(it->second, text);
      else if (node.IsSequence())
        at = unclosed_quote(*it, text);
      if (at)
        return at;
    }
    return std::nullopt;
  }
  if (!node.IsScalar() || node.Tag() != "!" || node.Mark().is_null())  // "!": not a plain scalar
    return std::nullopt;
  const size_t open = size_t(node.Mark().pos);
  if (open >= text.size() || (text[open] != '"' && text[open] != '\''))
    return std::nullopt;  // a block scalar (| or >)
  const char quote = text[open];
  for (size_t i = open + 1; i < text.size(); ++i) {
    if (quote == '"' && text[i] == '\\')
      ++i;  // an escaped character
    else if (quote == '\'' && text[i] == quote && i + 1 < text.size() && text[i + 1] == quote)
      ++i;  // '' is a quote inside a single-quoted scalar
    else if (text[i] == quote)
      return std::nullopt;
  }
  return node.Mark();
}

// Offset of the "---" line that starts a second document (one after a line of content), or npos. A "---" before
// any content starts the first document; "..." ends a document, and content after it starts another.
size_t second_document(const std::string& text)
{
  bool content = false, ended = false;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos)
      end = text.size();
    const std::string line = text.substr(at, end - at);
    auto marker = [&](const char* m) {
      return line.compare(0, 3, m) == 0 && (line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r');
    };
    const size_t first = line.find_first_not_of(" \t\r");
    const bool blank = first == std::string::npos || line[first] == '#';
    if (marker("---")) {
      if (content || ended)
        return at;
      content = line.find_first_not_of(" \t\r", 3) != std::string::npos;  // "--- value" is content
    } else if (marker("...")) {
      ended = content || ended;
    } else if (!blank) {
      if (ended)
        return at;
      content = true;
    }
    at = end + 1;
  }
  return std::string::npos;
}

// Bounds on a document's tree, counted with every alias expanded: YAML aliases let a few hundred bytes stand for
// billions of nodes (nine levels, each a list of ten aliases of the level before, is 10^9 nodes), and every walk of
// the tree (the readers, the quote check below) would then never return. The largest shipped input, a Hugging Face
// config.json, has under 200 nodes and 4 levels; a hardware file about 80 nodes and 5 levels.
constexpr int64_t kMaxDocumentNodes = 100000;
constexpr int kMaxDocumentDepth = 64;

// Counts the nodes under `node` (itself included) into `count`, aliases expanded, stopping as soon as the count
// passes kMaxDocumentNodes or the depth kMaxDocumentDepth; returns the node at which it stopped, if it did.
std::optional<YAML::Mark> too_large(const YAML::Node& node, int depth, int64_t& count)
{
  if (++count > kMaxDocumentNodes || depth > kMaxDocumentDepth)
    return node.Mark();
  if (node.IsMap() || node.IsSequence())
    for (auto it = node.begin(); it != node.end(); ++it) {
      std::optional<YAML::Mark> at;
      if (node.IsMap() && !(at = too_large(it->first, depth + 1, count)))
        at = too_large(it->second, depth + 1, count);
      else if (node.IsSequence())
        at = too_large(*it, depth + 1, count);
      if (at)
        return at;
    }
  return std::nullopt;
}

// Where strict JSON parsing of `text` fails, with why; nullopt when the text is JSON. YAML accepts more than JSON
// (a trailing comma, comments, unquoted keys), so a config.json is checked as JSON before it is read as YAML.
std::optional<std::pair<Origin, std::string>> json_error(const std::string& path, const std::string& text)
{
  try {
    [[maybe_unused]] const auto parsed = nlohmann::json::parse(text);
    return std::nullopt;
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is the 1-based offset of the character at which the parser stopped.
    const size_t at = e.byte > 0 ? std::min(size_t(e.byte - 1), text.size()) : 0;
    const size_t line_start = text.rfind('\n', at == 0 ? 0 : at - 1);
    const int column = int(at - (line_start == std::string::npos ? 0 : line_start + 1)) + 1;
    std::string why = e.what();
    if (const size_t colon = why.find("syntax error"); colon != std::string::npos)
      why = why.substr(colon);
    return std::make_pair(Origin{path, line_of(text, at), column},
                          "malformed JSON (a .json file is read as strict JSON): " + why);
  }
}

// The parts of a dotted key ("parallel.stage_layers" -> {"parallel", "stage_layers"}); empty when a part is empty.
std::vector<std::string> key_parts(const std::string& dotted)
{
  std::vector<std::string> parts;
  std::stringstream ss(dotted);
  for (std::string part; std::getline(ss, part, '.');) {
    if (part.empty())
      return {};
    parts.push_back(part);
  }
  if (!dotted.empty() && dotted.back() == '.')
    return {};
  return parts;
}

constexpr const char* kUnsetMark = "--unset ";

}  // namespace

std::string unset_entry(const std::string& key) { return kUnsetMark + key; }

std::optional<std::string> unset_key(const std::string& entry)
{
  if (entry.rfind(kUnsetMark, 0) != 0)
    return std::nullopt;
  return entry.substr(std::string(kUnsetMark).size());
}

YamlFile YamlFile::load(const std::string& path, Diagnostics& diag)
{
  YamlFile f;
  f.path_ = path;
  f.dir_ = std::filesystem::path(path).parent_path().string();
  std::string text;
  if (std::string problem = read_input_file(path, text); !problem.empty()) {
    diag.add({path, 0, 0}, "", problem);
    return f;
  }
  // A second document would otherwise be ignored without a word. Found in the text, not with YAML::LoadAll: on
  // some malformed inputs yaml-cpp 0.7's LoadAll never returns (found by fuzzing, tests/fuzz/regressions/).
  if (const size_t separator = second_document(text); separator != std::string::npos) {
    diag.add({path, line_of(text, separator), 1}, "",
             "malformed YAML: a second document starts here; an input file holds one document (remove the '---' "
             "and what follows, or put it in a file of its own)");
    return f;
  }
  if (ends_with(path, ".json"))
    if (const auto error = json_error(path, text)) {
      diag.add(error->first, "", error->second);
      return f;
    }
  try {
    f.root_ = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    diag.add({path, e.mark.line + 1, e.mark.column + 1}, "", "malformed YAML: " + e.msg);
    return f;
  }
  int64_t nodes = 0;
  if (const auto at = too_large(f.root_, 0, nodes)) {
    diag.add({path, at->is_null() ? 0 : at->line + 1, at->is_null() ? 0 : at->column + 1}, "",
             "the document is too large: more than " + std::to_string(kMaxDocumentNodes) + " values or " +
                 std::to_string(kMaxDocumentDepth) + " levels of nesting once its aliases are expanded (an input "
                 "describes one model, system or plan: check for aliases that nest)");
    f.root_ = YAML::Node();
    return f;
  }
  if (const auto at = unclosed_quote(f.root_, text)) {
    diag.add({path, at->line + 1, at->column + 1}, "",
             "malformed YAML: the quoted string that starts here is never closed");
    f.root_ = YAML::Node();
    return f;
  }
  if (!f.root_.IsDefined() || f.root_.IsNull())
    diag.add({path, 0, 0}, "", "expected a mapping of keys to values, got an empty file");
  return f;
}

namespace {

void add_key_paths(const YAML::Node& node, const std::string& prefix, std::set<std::string>& paths)
{
  if (!node.IsMap())
    return;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string path = prefix + it->first.as<std::string>("");
    paths.insert(path);
    add_key_paths(it->second, path + ".", paths);
  }
}

}  // namespace

std::set<std::string> YamlFile::key_paths() const
{
  std::set<std::string> paths;
  add_key_paths(root_, "", paths);
  return paths;
}

std::string YamlFile::resolve(const std::string& relative) const
{
  std::filesystem::path p(relative);
  if (p.is_absolute() || dir_.empty())
    return p.lexically_normal().string();
  return (std::filesystem::path(dir_) / p).lexically_normal().string();
}

Origin YamlFile::origin(const YAML::Node& node, const std::string& key_path) const
{
  auto it = overrides_.find(key_path);
  if (it != overrides_.end())
    return {"<command line> --set " + it->second, 0, 0};
  if (!node.IsDefined())
    return {path_, 0, 0};
  auto m = node.Mark();
  if (m.is_null())
    return {path_, 0, 0};
  return {path_, m.line + 1, m.column + 1};
}

std::string YamlFile::set_override(const std::string& dotted, const std::string& value)
{
  if (dotted.empty())
    return "expected KEY=VALUE with a dotted key such as parallel.tp, got an empty key";
  if (!root_.IsMap())
    return "the file is not a mapping, so '" + override_prefix_ + dotted + "' cannot be set";
  std::vector<std::string> parts;
  std::stringstream ss(dotted);
  for (std::string part; std::getline(ss, part, '.');) {
    if (part.empty())
      return "expected a dotted key such as parallel.tp, got " + excerpt(override_prefix_ + dotted);
    parts.push_back(part);
  }
  YAML::Node parsed;
  try {
    parsed = YAML::Load(value);
  } catch (const YAML::Exception& e) {
    return "cannot parse the value " + excerpt(value) + ": " + e.msg;
  }
  // Walk with explicit node copies: yaml-cpp nodes are handles, assignment through operator[] rebinds.
  std::vector<YAML::Node> chain{root_};
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node child = chain.back()[parts[i]];
    if (!child.IsDefined() || child.IsNull()) {
      chain.back()[parts[i]] = YAML::Node(YAML::NodeType::Map);
      child = chain.back()[parts[i]];
    } else if (!child.IsMap()) {
      std::string prefix = override_prefix_;
      for (size_t j = 0; j <= i; ++j)
        prefix += (j ? "." : "") + parts[j];
      return "'" + prefix + "' is not a mapping, so '" + override_prefix_ + dotted + "' cannot be set";
    }
    chain.push_back(child);
  }
  chain.back()[parts.back()] = parsed.IsNull() ? YAML::Node(value) : parsed;
  overrides_[dotted] = override_prefix_ + dotted + "=" + value;
  return "";
}

std::string YamlFile::unset_override(const std::string& dotted)
{
  const std::vector<std::string> parts = key_parts(dotted);
  if (parts.empty())
    return "expected a dotted key such as parallel.stage_layers, got " + excerpt(override_prefix_ + dotted);
  // Read through const nodes (a non-const operator[] on a missing key would add it), holding each level as a node
  // of its own (assigning one yaml-cpp node to another rebinds the first's data).
  std::vector<YAML::Node> chain{root_};
  for (size_t i = 0; i < parts.size(); ++i) {
    const YAML::Node& parent = chain.back();
    const YAML::Node child = parent.IsMap() ? parent[parts[i]] : YAML::Node(YAML::NodeType::Undefined);
    if (!child.IsDefined()) {
      std::string at = override_prefix_;
      for (size_t j = 0; j < i; ++j)
        at += parts[j] + ".";
      std::vector<std::string> given;
      if (parent.IsMap())
        for (auto it = parent.begin(); it != parent.end(); ++it)
          given.push_back(it->first.as<std::string>(""));
      const std::string near = closest(parts[i], given);
      return "'" + override_prefix_ + dotted + "' cannot be unset: " + path_ + " does not give it" +
             (near.empty() ? "" : "; did you mean '" + at + near + "'?");
    }
    if (i + 1 == parts.size())
      chain.back().remove(parts[i]);
    else
      chain.push_back(child);
  }
  return "";
}

void YamlFile::apply_overrides(const std::vector<std::string>& sets, const std::string& prefix, Diagnostics& diag)
{
  override_prefix_ = prefix;
  for (const auto& o : sets) {
    if (const auto key = unset_key(o)) {
      if (const std::string err = unset_override(*key); !err.empty())
        diag.add({"<command line> --unset " + prefix + *key, 0, 0}, "", err);
      continue;
    }
    const auto eq = o.find('=');
    const std::string err = eq == std::string::npos ? "expected KEY=VALUE, got " + excerpt(prefix + o)
                                                    : set_override(o.substr(0, eq), o.substr(eq + 1));
    if (!err.empty())
      diag.add({"<command line> --set " + prefix + o, 0, 0}, "", err);
  }
}

}  // namespace dtsim::config
