#pragma once
/// One key of an input file, declared once: its name, what it holds (type, unit, limits, choices), whether it is
/// required and what its absence means, and one line of doc. Readers read a key through its declaration
/// (MapReader's overloads taking a Key), and docs/yaml-reference.md's key tables are generated from the same
/// declarations (key_table; `dtsim_docs`), so the name, the limits and the doc cannot drift apart. In the manner of
/// ns-3's TypeId attributes and gem5's SimObject parameters.
#include <optional>
#include <string>
#include <vector>

#include "config/limits.hpp"
#include "config/units.hpp"

namespace dtsim::config {

enum class KeyType { Integer, Number, Quantity, String, Choice, Boolean, IntegerList, NumberList, Section };

enum class Presence { Required, Optional };

struct Key {
  std::string name;  ///< relative to the mapping it sits in ("bandwidth")
  KeyType type = KeyType::String;
  Presence presence = Presence::Optional;
  Dimension dimension = Dimension::Time;  ///< Quantity
  QuantityRange quantity_range{0, 0, "", ""};
  IntRange int_range{0, 0};
  double lo = 0, hi = 0;                  ///< Number
  std::vector<std::string> choices;       ///< Choice
  std::string absent;                     ///< Optional: what its absence means ("the bandwidth", "not given")
  std::optional<double> default_value;    ///< Integer, Number, Quantity: the value an absent key takes (SI units)
  std::string default_choice;             ///< Choice: the choice an absent key takes ("": none)
  bool auto_allowed = false;              ///< Integer: `auto` is accepted too (its reader decides what it means)
  std::vector<std::string> aliases;       ///< other names a file may give it instead (older Hugging Face configs)
  std::string doc;

  /// The value an absent numeric key takes; the reference shows it where `absent` says nothing else.
  Key defaults_to(double v) const;
  /// The choice an absent Choice key takes; the reference shows it.
  Key defaults_to(std::string choice) const;
  /// An Integer key that also takes `auto`.
  Key or_auto() const;
  /// The key under other names as well.
  Key also_named(std::vector<std::string> names) const;

  bool required() const { return presence == Presence::Required; }

  static Key integer(std::string name, IntRange r, Presence p, std::string absent, std::string doc);
  static Key number(std::string name, double lo, double hi, Presence p, std::string absent, std::string doc);
  static Key quantity(std::string name, Dimension d, QuantityRange r, Presence p, std::string absent,
                      std::string doc);
  static Key string(std::string name, Presence p, std::string absent, std::string doc);
  static Key choice(std::string name, std::vector<std::string> choices, Presence p, std::string absent,
                    std::string doc);
  static Key boolean(std::string name, Presence p, std::string absent, std::string doc);
  static Key integer_list(std::string name, IntRange r, Presence p, std::string absent, std::string doc);
  static Key number_list(std::string name, double lo, double hi, Presence p, std::string absent, std::string doc);
  static Key section(std::string name, Presence p, std::string doc);
};

/// The keys of one mapping, under its path from the file's root ("node.nvlink"; "" for the root), for the docs.
struct KeyGroup {
  std::string path;
  std::vector<const Key*> keys;
};

/// What the reference says of an absent key: "required", `absent`, or the default value in the key's unit.
std::string absent_text(const Key& k);

/// The type column of the reference: "bandwidth, 1 MB/s to 1000 PB/s", "integer 1 to 4096", "gpu-cluster or ...".
std::string type_text(const Key& k);

/// A Markdown table of the groups' keys: key, type, required or what absence means, meaning. Sections are left
/// out (their keys are listed with their paths).
std::string key_table(const std::vector<KeyGroup>& groups);

/// What a file of declarations needs, in one line: `using namespace config::declaring;`.
namespace declaring {
using config::Dimension;
using config::Key;
using config::Presence;
namespace limits = config::limits;
inline constexpr Presence kRequired = Presence::Required;
inline constexpr Presence kOptional = Presence::Optional;
}  // namespace declaring

}  // namespace dtsim::config
