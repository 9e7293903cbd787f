// The formats of a run (issue 31): one list, looked up by name; an unknown name is refused with the names there are.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "report/run_formats.hpp"

namespace {

TEST(RunFormats, FindsEachFormatByItsName)
{
  EXPECT_EQ(dtsim::report::run_format_names(), (std::vector<std::string>{"table", "json"}));
  for (const auto& name : dtsim::report::run_format_names())
    EXPECT_EQ(dtsim::report::run_format(name).name, name);
}

TEST(RunFormats, RefusesAnUnknownFormatWithTheList)
{
  try {
    dtsim::report::run_format("yaml");
    FAIL() << "an unknown format was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "unknown format 'yaml' (formats: table, json)");
  }
}

}  // namespace
