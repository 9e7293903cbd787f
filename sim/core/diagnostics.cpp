#include "core/diagnostics.hpp"

#include <iostream>
#include <utility>

namespace dtsim {

std::string Origin::str() const
{
  std::string s = file.empty() ? "<input>" : file;
  if (line > 0)
    s += ":" + std::to_string(line) + ":" + std::to_string(column);
  return s;
}

std::string Diagnostic::str() const
{
  std::string s = where.str() + ": error: ";
  if (!key_path.empty())
    s += key_path + ": ";
  return s + message;
}

void warn(const Diagnostic& d)
{
  std::string s = d.where.str() + ": warning: ";
  if (!d.key_path.empty())
    s += d.key_path + ": ";
  std::cerr << s << d.message << "\n";
}

void Diagnostics::add(Origin where, std::string key_path, std::string message)
{
  items_.push_back({std::move(where), std::move(key_path), std::move(message)});
}

void Diagnostics::append(const Diagnostics& other)
{
  items_.insert(items_.end(), other.items_.begin(), other.items_.end());
}

void Diagnostics::throw_if_any() const
{
  if (!items_.empty())
    throw ConfigError(items_);
}

void throw_config_error(Origin where, std::string key_path, std::string message)
{
  Diagnostics d;
  d.add(std::move(where), std::move(key_path), std::move(message));
  d.throw_if_any();
  throw InternalError("unreachable");
}

static std::string join(const std::vector<Diagnostic>& items)
{
  std::string s;
  for (const auto& d : items)
    s += (s.empty() ? "" : "\n") + d.str();
  return s;
}

ConfigError::ConfigError(std::vector<Diagnostic> items) : std::runtime_error(join(items)), items_(std::move(items)) {}

}  // namespace dtsim
