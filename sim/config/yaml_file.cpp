#include "config/yaml_file.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace dtsim::config {

YamlFile YamlFile::load(const std::string& path, Diagnostics& diag)
{
  YamlFile f;
  f.path_ = path;
  f.dir_ = std::filesystem::path(path).parent_path().string();
  std::ifstream in(path);
  if (!in || std::filesystem::is_directory(path)) {
    diag.add({path, 0, 0}, "", "cannot read file: it does not exist or is not a readable file");
    return f;
  }
  std::stringstream text;
  text << in.rdbuf();
  try {
    f.root_ = YAML::Load(text.str());
  } catch (const YAML::Exception& e) {
    diag.add({path, e.mark.line + 1, e.mark.column + 1}, "", "malformed YAML: " + e.msg);
    f.root_ = YAML::Node();
    return f;
  }
  if (!f.root_.IsDefined() || f.root_.IsNull())
    diag.add({path, 0, 0}, "", "expected a mapping of keys to values, got an empty file");
  return f;
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
    return "the file is not a mapping, so '" + dotted + "' cannot be set";
  std::vector<std::string> parts;
  std::stringstream ss(dotted);
  for (std::string part; std::getline(ss, part, '.');) {
    if (part.empty())
      return "expected a dotted key such as parallel.tp, got '" + dotted + "'";
    parts.push_back(part);
  }
  YAML::Node parsed;
  try {
    parsed = YAML::Load(value);
  } catch (const YAML::Exception& e) {
    return "cannot parse the value '" + value + "': " + e.msg;
  }
  // Walk with explicit node copies: yaml-cpp nodes are handles, assignment through operator[] rebinds.
  std::vector<YAML::Node> chain{root_};
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node child = chain.back()[parts[i]];
    if (!child.IsDefined() || child.IsNull()) {
      chain.back()[parts[i]] = YAML::Node(YAML::NodeType::Map);
      child = chain.back()[parts[i]];
    } else if (!child.IsMap()) {
      std::string prefix;
      for (size_t j = 0; j <= i; ++j)
        prefix += (j ? "." : "") + parts[j];
      return "'" + prefix + "' is not a mapping, so '" + dotted + "' cannot be set";
    }
    chain.push_back(child);
  }
  chain.back()[parts.back()] = parsed.IsNull() ? YAML::Node(value) : parsed;
  overrides_[dotted] = dotted + "=" + value;
  return "";
}

}  // namespace dtsim::config
