// The kinds of system as wings behind one interface (systems/system_kind.hpp): each scenario gets the wing its
// hardware file's `kind` names, the registry and the hardware reader know the same kinds, and the calls that differ
// by kind give each kind's answer. No simulation runs here.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "app/load.hpp"
#include "core/diagnostics.hpp"
#include "hardware/hardware_yaml.hpp"
#include "hardware/hardware_kind.hpp"
#include "systems/cerebras_wafer/cerebras_wafer.hpp"
#include "systems/cerebras_wafer/wafer_hardware.hpp"
#include "systems/cerebras_wafer/wafer_run.hpp"
#include "systems/gpu_cluster/gpu_cluster.hpp"
#include "systems/system_kinds.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::test::source_path;
namespace systems = dtsim::systems;

TEST(SystemKinds, EachHardwareGetsTheWingItsKindNames)
{
  auto gpu = dtsim::app::load_for_simulation(source_path("scenarios/tiny.yaml"), {});
  auto wafer = dtsim::app::load_for_simulation(source_path("scenarios/wafer/gpt-neox-20b-cs2.yaml"), {});
  EXPECT_EQ(gpu.hardware.kind, "gpu-cluster");
  EXPECT_EQ(wafer.hardware.kind, "cerebras-wafer");
  EXPECT_EQ(&systems::system_kind(gpu), &systems::gpu_cluster());
  EXPECT_EQ(&systems::system_kind(wafer), &systems::cerebras_wafer());
}

TEST(SystemKinds, EachWingReadsItsOwnHardwareAndSetsItsOwnRules)
{
  std::vector<std::string> names;
  for (const auto* k : systems::system_kinds())
    names.push_back(k->name());
  // Both wings of today, each registered once; a new vendor's wing adds its own name without editing this test.
  for (const std::string kind : {"gpu-cluster", "cerebras-wafer"})
    EXPECT_EQ(std::count(names.begin(), names.end(), kind), 1) << kind;
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  // systems::install (run by the tests' main, as by every program) registered each wing for the readers.
  EXPECT_EQ(dtsim::hardware::hardware_kind_names(), names);
  for (const auto* k : systems::system_kinds()) {
    EXPECT_EQ(systems::find_system_kind(k->name()), k);
    EXPECT_EQ(dtsim::hardware::find_hardware_kind(k->name()), k);
  }
  EXPECT_EQ(systems::find_system_kind("tpu-pod"), nullptr);
  // The wafer's sections are the wafer wing's: a GPU cluster's hardware has none.
  auto gpu = dtsim::app::load_for_simulation(source_path("scenarios/tiny.yaml"), {});
  auto wafer = dtsim::app::load_for_simulation(source_path("scenarios/wafer/gpt-neox-20b-cs2.yaml"), {});
  EXPECT_EQ(gpu.hardware.system, nullptr);
  EXPECT_THROW(systems::wafer_hardware(gpu.hardware), std::logic_error);
  EXPECT_EQ(systems::wafer_hardware(wafer.hardware).wafer.name, "WSE-2");
  EXPECT_TRUE(systems::gpu_cluster().pads_vocabulary());
  EXPECT_FALSE(systems::cerebras_wafer().pads_vocabulary());
}

// A misspelt kind: the one error, listing every registered kind (so that a new wing needs no edit here) with the
// nearest as a suggestion, and no follow-on errors from the sections the file's kind would have read.
TEST(SystemKinds, AMisspeltKindIsRefusedWithEveryRegisteredKind)
{
  const std::string path = testing::TempDir() + "misspelt-kind.yaml";
  std::ifstream in(source_path("hardware/dgx-a100-80gb.yaml"));
  std::ofstream out(path);
  for (std::string line; std::getline(in, line);)
    out << (line.rfind("kind:", 0) == 0 ? "kind: gpu-clustr" : line) << "\n";
  out.close();
  dtsim::Diagnostics diag;
  dtsim::hardware::load_hardware(path, diag, {});
  ASSERT_EQ(diag.items().size(), 1u);
  EXPECT_EQ(diag.items()[0].key_path, "kind");
  std::string kinds;
  for (const auto& name : dtsim::hardware::hardware_kind_names())
    kinds += (kinds.empty() ? "" : ", ") + name;
  EXPECT_EQ(diag.items()[0].message, "expected one of " + kinds + ", got 'gpu-clustr'; did you mean 'gpu-cluster'?");
}

TEST(SystemKinds, AHardwareFileWithoutItsKindIsRefusedWithTheKinds)
{
  const std::string path = testing::TempDir() + "no-kind.yaml";
  std::ifstream in(source_path("hardware/dgx-a100-80gb.yaml"));
  std::ofstream out(path);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("kind:", 0) != 0)
      out << line << "\n";
  out.close();
  dtsim::Diagnostics diag;
  dtsim::hardware::load_hardware(path, diag, {});
  ASSERT_EQ(diag.items().size(), 1u);
  EXPECT_EQ(diag.items()[0].key_path, "kind");
  EXPECT_NE(diag.items()[0].message.find("gpu-cluster"), std::string::npos) << diag.items()[0].message;
  EXPECT_NE(diag.items()[0].message.find("cerebras-wafer"), std::string::npos) << diag.items()[0].message;
}

TEST(SystemKinds, WaferPlansAreItsModesThatFit)
{
  // GPT-NeoX 20B on one CS-2: weight streaming fits, layer pipelined needs 16 bytes per parameter in SRAM and
  // does not (docs/wafer.md).
  auto s = dtsim::app::load_for_simulation(source_path("scenarios/wafer/gpt-neox-20b-cs2.yaml"), {});
  auto c = systems::cerebras_wafer().plan_choices(s);
  EXPECT_EQ(c.candidates, 2);
  EXPECT_EQ(c.not_fitting, 1);
  ASSERT_EQ(c.plans.size(), 1u);
  EXPECT_EQ(c.names, std::vector<std::string>{"weight-streaming"});
  EXPECT_EQ(c.plans[0].wafer_mode, dtsim::scenario::WaferMode::WeightStreaming);
  // The interval comes from the published runs held out of the wafer model's fit (fourteen, docs/wafer.md).
  const auto iv = systems::cerebras_wafer().step_interval(s, 1.0);
  ASSERT_TRUE(iv.known) << iv.basis;
  EXPECT_LT(iv.low_s, 1.0);
  EXPECT_GT(iv.high_s, 1.0);
  EXPECT_NEAR(iv.low_s * iv.high_s, 1.0, 1e-9);
  EXPECT_EQ(systems::cerebras_wafer().describe_plan(s), "dp 1 mb 16 recompute full");
}

TEST(SystemKinds, GpuPlansComeFromThePlanSpace)
{
  auto s = dtsim::app::load_for_simulation(source_path("scenarios/tiny.yaml"), {});
  auto c = systems::gpu_cluster().plan_choices(s);
  EXPECT_GT(c.candidates, 1);
  EXPECT_LE(int64_t(c.plans.size()) + c.invalid + c.not_fitting, c.candidates);
  EXPECT_FALSE(c.plans.empty());
  EXPECT_EQ(c.names.size(), c.plans.size());
  // `dtsim compare` reads one plan alone: its recomputation is labelled (tiny: none), as the wafer's is.
  const std::string plan = systems::gpu_cluster().describe_plan(s);
  EXPECT_NE(plan.find(" recompute none "), std::string::npos) << plan;
}

TEST(SystemKinds, EachKindNamesItsOwnTermsDevicesAndLimits)
{
  const auto& gpu = systems::gpu_cluster();
  const auto& wafer = systems::cerebras_wafer();
  EXPECT_STREQ(gpu.sections().dp_label(), "exposed DP communication");
  EXPECT_STREQ(wafer.sections().dp_label(), "exposed gradient streaming");
  EXPECT_STREQ(gpu.sections().track_name(1), "tensor-parallel");
  EXPECT_STREQ(wafer.sections().track_name(2), "weights in");
  EXPECT_EQ(gpu.count_devices(1), "1 GPU");
  EXPECT_EQ(wafer.count_devices(16), "16 systems");
  EXPECT_EQ(gpu.why_no_plan_search(), "");
  EXPECT_NE(wafer.why_no_plan_search(), "");
  EXPECT_EQ(gpu.sections().execution({}), "");
}

// Jobs on a shared fabric are replayed by their wing; the wafer, which has no switch fabric, refuses and says why.
TEST(SystemKinds, AWaferRefusesToReplayJobsOnASharedFabricSayingWhy)
{
  auto wafer = dtsim::app::load_for_simulation(source_path("scenarios/wafer/gpt-neox-20b-cs2.yaml"), {});
  const std::string why = systems::cerebras_wafer().why_no_shared_fabric(wafer);
  ASSERT_NE(why, "");
  try {
    systems::cerebras_wafer().replay_shared_fabric({{&wafer, dtsim::parallel::Placement(1, 1, 1, 1), 0.0}}, 1);
    FAIL() << "the wafer replayed a shared fabric";
  } catch (const dtsim::InternalError& e) {
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

TEST(SystemKinds, TheWaferPartOfAReportIsTheWafersOnly)
{
  dtsim::report::RunReport gpu_report;
  EXPECT_THROW(systems::wafer_run(gpu_report), std::logic_error);
}

}  // namespace
