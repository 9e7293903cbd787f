// The run record (issue 31): it travels from a child process as CBOR and comes back exactly, keys in order and every
// number to the last bit.
#include <gtest/gtest.h>

#include <string>

#include "app/simulate.hpp"
#include "core/child_process.hpp"
#include "report/run_record.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::report::RunRecord;

// Numbers that text could round (0.1, 1/3, 1e-300), integers of both signs, a null, nesting, and a string longer
// than a pipe holds (64 KiB) so that the child writes it in several pieces.
RunRecord awkward_record()
{
  RunRecord r;
  r.document["step_time_s"] = 0.1;
  r.document["third"] = 1.0 / 3.0;
  r.document["tiny"] = 1e-300;
  r.document["devices"] = 4096;
  r.document["offset"] = -7;
  r.document["interval"] = nullptr;
  r.document["plan"] = {{"tp", 8}, {"schedule", "1f1b"}, {"fits", true}};
  r.document["stages"] = nlohmann::ordered_json::array({1.5, 2.25});
  r.document["note"] = std::string(200000, 'x');
  r.execution = "layer-pipelined";
  return r;
}

TEST(RunRecord, ComesBackFromAChildExactly)
{
  const RunRecord sent = awkward_record();
  const auto bytes = dtsim::run_in_child_bytes([&]() { return dtsim::report::record_to_cbor(sent); });
  ASSERT_TRUE(bytes.has_value());
  const RunRecord got = dtsim::report::record_from_cbor(*bytes);
  EXPECT_EQ(got.document, sent.document);
  EXPECT_EQ(got.document.dump(2), sent.document.dump(2));  // same keys in the same order, same digits
  EXPECT_EQ(got.document["third"].get<double>(), 1.0 / 3.0);
  EXPECT_EQ(got.execution, sent.execution);
}

// One simulate() call: one SimGrid engine in this process.
TEST(RunRecord, OfASimulatedRunRoundTripsThroughCbor)
{
  auto s = dtsim::scenario::load_scenario(dtsim::test::source_path("scenarios/tiny.yaml"), {});
  const RunRecord made = dtsim::report::make_record(dtsim::app::simulate(s, false));
  ASSERT_TRUE(made.document.contains("breakdown_per_stage"));
  const auto bytes = dtsim::report::record_to_cbor(made);
  const RunRecord back = dtsim::report::record_from_cbor(bytes);
  EXPECT_EQ(back.document, made.document);
  EXPECT_EQ(back.document.dump(2), made.document.dump(2));
  EXPECT_EQ(back.execution, "");  // a GPU cluster has no execution mode to choose
  EXPECT_EQ(dtsim::report::record_to_cbor(back), bytes);
}

TEST(RunRecord, BytesThatAreNoRecordAreRefused)
{
  EXPECT_ANY_THROW(dtsim::report::record_from_cbor({0xff, 0x00}));
  EXPECT_ANY_THROW(dtsim::report::record_from_cbor(nlohmann::ordered_json::to_cbor({{"document", 1}})));
}

}  // namespace
