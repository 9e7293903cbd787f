// dtsim_docs: writes or checks the key tables of docs/yaml-reference.md from the keys' declarations
// (config/key.hpp). Each table sits between `<!-- keys: NAME -->` and `<!-- /keys -->`; the prose around it is kept
// as written. `check` exits 1 and names the tables that differ from the declarations (a ctest runs it).
//   dtsim_docs write docs/yaml-reference.md
//   dtsim_docs check docs/yaml-reference.md
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "config/key.hpp"
#include "hardware/hardware_keys.hpp"
#include "model/model_keys.hpp"
#include "scenario/scenario_keys.hpp"
#include "stack/stack_keys.hpp"
#include "systems/system_kinds.hpp"

namespace {

using Groups = std::function<std::vector<dtsim::config::KeyGroup>()>;

// The inputs' own tables; each kind of system's hardware sections come under `hardware-kinds` (kind_tables).
const std::map<std::string, Groups>& tables()
{
  namespace hw = dtsim::hardware::keys;
  static const std::map<std::string, Groups> t = [] {
    std::map<std::string, Groups> made = {
      {"hardware", hw::root_groups},
      {"model", dtsim::model::keys::groups},
      {"scenario", dtsim::scenario::keys::groups},
      {"stack", dtsim::stack::keys::groups},
    };
    return made;
  }();
  return t;
}

// Each registered kind's hardware sections: a heading, what they describe, their table. A new kind's wing brings
// its own, with no line here or in the document.
std::string kind_tables()
{
  std::string out;
  for (const auto* kind : dtsim::systems::system_kinds())
    out += std::string(out.empty() ? "" : "\n") + "### `kind: " + kind->name() + "`\n\n" + kind->key_doc() + "\n\n" +
           dtsim::config::key_table(kind->key_groups());
  return out;
}

// The document with every marked table made anew; `unknown` collects marker names no declarations back.
std::string regenerate(const std::string& doc, std::string& unknown)
{
  const std::string open = "<!-- keys: ", close = "<!-- /keys -->";
  std::string out;
  size_t pos = 0;
  while (true) {
    const size_t start = doc.find(open, pos);
    if (start == std::string::npos)
      break;
    const size_t name_end = doc.find(" -->", start);
    const size_t end = doc.find(close, start);
    if (name_end == std::string::npos || end == std::string::npos) {
      unknown += " (an unclosed table)";
      break;
    }
    const std::string name = doc.substr(start + open.size(), name_end - start - open.size());
    out += doc.substr(pos, name_end + 4 - pos) + "\n";
    auto it = tables().find(name);
    if (name == "hardware-kinds")
      out += kind_tables();
    else if (it == tables().end())
      unknown += " " + name;
    else
      out += dtsim::config::key_table(it->second());
    out += close;
    pos = end + close.size();
  }
  return out + doc.substr(pos);
}

}  // namespace

int main(int argc, char** argv)
{
  dtsim::systems::install();
  if (argc != 3 || (std::string(argv[1]) != "write" && std::string(argv[1]) != "check")) {
    std::cerr << "usage: dtsim_docs write|check docs/yaml-reference.md\n";
    return 2;
  }
  std::ifstream in(argv[2]);
  if (!in) {
    std::cerr << argv[2] << ": cannot read\n";
    return 2;
  }
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  std::string unknown;
  const std::string made = regenerate(doc, unknown);
  if (!unknown.empty()) {
    std::cerr << argv[2] << ": key tables without declarations:" << unknown << "\n";
    return 2;
  }
  if (std::string(argv[1]) == "write") {
    if (made != doc)
      std::ofstream(argv[2]) << made;
    std::cout << argv[2] << (made == doc ? ": key tables current\n" : ": key tables written\n");
    return 0;
  }
  if (made != doc) {
    std::cout << argv[2] << ": its key tables differ from the keys' declarations; run bash scripts/docs.sh\n";
    return 1;
  }
  std::cout << argv[2] << ": key tables current\n";
  return 0;
}
