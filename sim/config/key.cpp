#include "config/key.hpp"

#include <cstdio>
#include <sstream>

namespace dtsim::config {

namespace {

// What every declaration gives: name, type, presence, what absence means, doc.
Key declared(std::string name, KeyType type, Presence p, std::string absent, std::string doc)
{
  Key k;
  k.name = std::move(name);
  k.type = type;
  k.presence = p;
  k.absent = std::move(absent);
  k.doc = std::move(doc);
  return k;
}

}  // namespace

Key Key::integer(std::string name, IntRange r, Presence p, std::string absent, std::string doc)
{
  Key k = declared(std::move(name), KeyType::Integer, p, std::move(absent), std::move(doc));
  k.int_range = r;
  return k;
}

Key Key::number(std::string name, double lo, double hi, Presence p, std::string absent, std::string doc)
{
  Key k = declared(std::move(name), KeyType::Number, p, std::move(absent), std::move(doc));
  k.lo = lo;
  k.hi = hi;
  return k;
}

Key Key::quantity(std::string name, Dimension d, QuantityRange r, Presence p, std::string absent, std::string doc)
{
  Key k = declared(std::move(name), KeyType::Quantity, p, std::move(absent), std::move(doc));
  k.dimension = d;
  k.quantity_range = r;
  return k;
}

Key Key::string(std::string name, Presence p, std::string absent, std::string doc)
{
  return declared(std::move(name), KeyType::String, p, std::move(absent), std::move(doc));
}

Key Key::choice(std::string name, std::vector<std::string> choices, Presence p, std::string absent, std::string doc)
{
  Key k = declared(std::move(name), KeyType::Choice, p, std::move(absent), std::move(doc));
  k.choices = std::move(choices);
  return k;
}

Key Key::boolean(std::string name, Presence p, std::string absent, std::string doc)
{
  return declared(std::move(name), KeyType::Boolean, p, std::move(absent), std::move(doc));
}

Key Key::integer_list(std::string name, IntRange r, Presence p, std::string absent, std::string doc)
{
  Key k = integer(std::move(name), r, p, std::move(absent), std::move(doc));
  k.type = KeyType::IntegerList;
  return k;
}

Key Key::number_list(std::string name, double lo, double hi, Presence p, std::string absent, std::string doc)
{
  Key k = number(std::move(name), lo, hi, p, std::move(absent), std::move(doc));
  k.type = KeyType::NumberList;
  return k;
}

Key Key::section(std::string name, Presence p, std::string doc)
{
  return declared(std::move(name), KeyType::Section, p, "", std::move(doc));
}

Key Key::defaults_to(double v) const
{
  Key k = *this;
  k.default_value = v;
  return k;
}

Key Key::defaults_to(std::string choice) const
{
  Key k = *this;
  k.default_choice = std::move(choice);
  return k;
}

Key Key::or_auto() const
{
  Key k = *this;
  k.auto_allowed = true;
  return k;
}

Key Key::also_named(std::vector<std::string> names) const
{
  Key k = *this;
  k.aliases = std::move(names);
  return k;
}

namespace {

const char* dimension_name(Dimension d)
{
  switch (d) {
    case Dimension::Time: return "time";
    case Dimension::Bytes: return "size";
    case Dimension::Bandwidth: return "bandwidth";
    case Dimension::FlopRate: return "compute rate";
    case Dimension::Power: return "power";
    case Dimension::Count: return "count";
  }
  return "quantity";
}

std::string g(double v)
{
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

}  // namespace

std::string type_text(const Key& k)
{
  switch (k.type) {
    case KeyType::Integer:
      return "integer " + std::to_string(k.int_range.lo) + " to " + std::to_string(k.int_range.hi) +
             (k.auto_allowed ? ", or `auto`" : "");
    case KeyType::IntegerList:
      return "list of integers " + std::to_string(k.int_range.lo) + " to " + std::to_string(k.int_range.hi);
    case KeyType::Number: return "number " + g(k.lo) + " to " + g(k.hi);
    case KeyType::Quantity:
      return std::string(dimension_name(k.dimension)) + ", " + k.quantity_range.lo_text + " to " +
             k.quantity_range.hi_text;
    case KeyType::String: return "string";
    case KeyType::Choice: {
      std::string s;
      for (size_t i = 0; i < k.choices.size(); ++i)
        s += (i == 0 ? "" : i + 1 == k.choices.size() ? " or " : ", ") + ("`" + k.choices[i] + "`");
      return s;
    }
    case KeyType::Boolean: return "true or false";
    case KeyType::NumberList: return "list of numbers " + g(k.lo) + " to " + g(k.hi);
    case KeyType::Section: return "mapping";
  }
  return "";
}

std::string absent_text(const Key& k)
{
  if (k.required())
    return "required";
  if (!k.default_choice.empty())
    return "`" + k.default_choice + "`";
  if (!k.absent.empty() || !k.default_value)
    return k.absent;
  return k.type == KeyType::Quantity ? format_quantity(*k.default_value, k.dimension) : g(*k.default_value);
}

std::string key_table(const std::vector<KeyGroup>& groups)
{
  std::ostringstream out;
  out << "| key | type | if absent | meaning |\n|---|---|---|---|\n";
  for (const auto& group : groups)
    for (const Key* k : group.keys) {
      if (k->type == KeyType::Section)
        continue;
      std::string path = "`" + (group.path.empty() ? k->name : group.path + "." + k->name) + "`";
      for (const auto& a : k->aliases)
        path += " or `" + a + "`";
      out << "| " << path << " | " << type_text(*k) << " | " << absent_text(*k) << " | "
          << k->doc << " |\n";
    }
  return out.str();
}

}  // namespace dtsim::config
