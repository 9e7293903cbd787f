// `dtsim explain`'s kernel table (sim/report/explain.cpp) keeps its columns whatever the names: the name and shape
// columns are as wide as their longest entry. MXFP8's scale-swizzle kernels (up to 38 characters:
// fc1_gate_up.scale_swizzle.dgrad_weight) and the context ring's collective ("context ring (K, V, dK, dV)", 27) ran
// past the 24 characters the name column once had and pushed their rows out of line.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "app/load.hpp"
#include "parallel/plan.hpp"
#include "report/explain.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::test::source_path;

std::string explain(const std::string& scenario)
{
  const auto s = dtsim::app::load_for_simulation(source_path(scenario), {});
  std::ostringstream out;
  dtsim::report::print_explain(out, s, dtsim::parallel::derive_plan(s));
  return out.str();
}

// Every row of the table ends where the header does (a kernel's "of peak"), or where its "us" column does (a
// collective's, which has no FLOPs or share of peak): the width of the header less the "of peak" column. Returns
// the name column's width (where the shape column starts), to show the case is one of long names.
size_t check_columns(const std::string& text)
{
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line) && line.rfind("  kernel ", 0) != 0) {
  }
  const size_t header = line.size();
  const size_t name_width = line.find("shape (batch") - 3;  // "  " before the column, " " after it
  const size_t collective = header - 11;  // less " %10s", the "of peak" column
  EXPECT_GT(header, 0u) << text;
  size_t rows = 0;
  while (std::getline(in, line) && !line.empty()) {
    if (line.rfind("  (", 0) == 0 || line.rfind("  ", 0) != 0)  // a note or a pass's title
      continue;
    ++rows;
    EXPECT_TRUE(line.size() == header || line.size() == collective)
        << line.size() << " columns, header " << header << ": " << line;
  }
  EXPECT_GT(rows, 20u);
  return name_width;
}

}  // namespace

// Llama 3 70B on 64 B200 in MXFP8: block-scaling kernels' names of up to 38 characters.
TEST(ExplainTable, LongKernelNamesKeepTheColumns)
{
  EXPECT_GE(check_columns(explain("scenarios/examples/llama3-70b-b200x64-mxfp8.yaml")), 38u);
}

// Llama 3 405B on H100 with cp 2: the context ring's collective, 27 characters.
TEST(ExplainTable, LongCollectiveNamesKeepTheColumns)
{
  EXPECT_GE(check_columns(explain("scenarios/compare/llama3-405b-h100.yaml")), 27u);
}

// Short names: the columns still hold the header ("shape (batch x m x n x k)") and every row.
TEST(ExplainTable, ShortNamesKeepTheColumns)
{
  EXPECT_GE(check_columns(explain("scenarios/examples/bert-large-a100x8.yaml")), 21u);
}
