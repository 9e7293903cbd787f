// Keys declared once (config/key.hpp): a read through a declaration takes its name, presence, limits and default
// from it; the reference's type and default columns are made from it; a key read as another type than declared is
// a programming error.
#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>

#include "config/key.hpp"
#include "config/map_reader.hpp"
#include "config/yaml_file.hpp"
#include "core/diagnostics.hpp"

namespace {

using dtsim::config::Dimension;
using dtsim::config::Key;
using dtsim::config::KeyGroup;
using dtsim::config::MapReader;
using dtsim::config::Presence;
namespace limits = dtsim::config::limits;

const Key kBandwidth = Key::quantity("bandwidth", Dimension::Bandwidth, limits::kBandwidth, Presence::Required, "",
                                     "per direction");
const Key kLevels = Key::integer("levels", limits::kTopologyLevels, Presence::Optional, "", "switch levels")
                        .defaults_to(2);
const Key kType = Key::choice("type", {"fat-tree", "rail-optimized"}, Presence::Optional, "", "leaf grouping")
                      .defaults_to("fat-tree");

std::string write_file(const std::string& text)
{
  // One file per test: ctest runs each test in its own process, side by side, and a shared name let one test read
  // the file another had just written.
  const std::string path =
      testing::TempDir() + "keys-" + testing::UnitTest::GetInstance()->current_test_info()->name() + ".yaml";
  std::ofstream(path) << text;
  return path;
}

TEST(Keys, ReadsTakeTheDeclarationsLimitsAndDefaults)
{
  dtsim::Diagnostics diag;
  auto file = dtsim::config::YamlFile::load(write_file("bandwidth: 200 Gb/s\n"), diag);
  MapReader m(file, file.root(), "", diag);
  EXPECT_DOUBLE_EQ(m.value(kBandwidth), 25e9);
  EXPECT_DOUBLE_EQ(m.value(kLevels), 2);                   // absent: its default
  EXPECT_EQ(m.choice(kType).value_or(""), "fat-tree");     // absent: its default choice
  m.finish();
  EXPECT_TRUE(diag.empty());
}

TEST(Keys, ARequiredKeyMissingAndAValueOutOfItsRangeAreErrors)
{
  dtsim::Diagnostics diag;
  auto file = dtsim::config::YamlFile::load(write_file("levels: 9\n"), diag);
  MapReader m(file, file.root(), "", diag);
  m.value(kBandwidth);
  m.value(kLevels);
  m.finish();
  ASSERT_EQ(diag.items().size(), 2u);
  EXPECT_NE(diag.items()[0].message.find("missing required key 'bandwidth'"), std::string::npos);
  EXPECT_NE(diag.items()[1].message.find("expected an integer between 1 and 3, got 9"), std::string::npos);
}

TEST(Keys, AKeyReadAsAnotherTypeThanDeclaredIsAProgrammingError)
{
  dtsim::Diagnostics diag;
  auto file = dtsim::config::YamlFile::load(write_file("levels: 2\n"), diag);
  MapReader m(file, file.root(), "", diag);
  EXPECT_THROW(m.quantity(kLevels), std::logic_error);
  EXPECT_THROW(m.value(kType), std::logic_error);
}

TEST(Keys, TheReferenceTableComesFromTheDeclarations)
{
  const std::string table = dtsim::config::key_table({KeyGroup{"network", {&kBandwidth, &kLevels, &kType}}});
  EXPECT_NE(table.find("| `network.bandwidth` | bandwidth, 1 MB/s to 1000 PB/s | required | per direction |"),
            std::string::npos) << table;
  EXPECT_NE(table.find("| `network.levels` | integer 1 to 3 | 2 | switch levels |"), std::string::npos) << table;
  EXPECT_NE(table.find("| `network.type` | `fat-tree` or `rail-optimized` | `fat-tree` | leaf grouping |"),
            std::string::npos) << table;
}

}  // namespace
