// `dtsim hardware FILE` prints every key a hardware file may give (hardware/hardware_record.hpp): each kind's declared
// keys (its wing's key_groups) appear in the records of its shipped files, so that the golden records
// (tests/golden/hardware/) pin every key and a key declared later cannot be left out of them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/diagnostics.hpp"
#include "hardware/hardware_keys.hpp"
#include "hardware/hardware_kind.hpp"
#include "hardware/hardware_record.hpp"
#include "hardware/hardware_yaml.hpp"
#include "test_paths.hpp"

namespace {

using Json = nlohmann::ordered_json;

Json record_of(const std::string& file)
{
  dtsim::Diagnostics diag;
  const auto hw = dtsim::hardware::load_hardware(dtsim::test::source_path(file), diag);
  diag.throw_if_any();
  return dtsim::hardware::hardware_record(hw);
}

// "device.efficiency.gemm" -> "/device/efficiency/gemm"; KERNEL, the reference's placeholder, -> flash_attention_2.
Json::json_pointer pointer(const std::string& group, const std::string& key)
{
  std::string p = "/";
  for (char c : group)
    p += c == '.' ? '/' : c;
  if (const auto at = p.find("KERNEL"); at != std::string::npos)
    p.replace(at, 6, "flash_attention_2");
  return Json::json_pointer((group.empty() ? "/" : p + "/") + key);
}

// Every declared key of `kind` in one of `records` (a domain's keys sit in `node` or in `scale_up`).
void expect_every_key(const std::string& kind, const std::vector<Json>& records)
{
  std::vector<dtsim::config::KeyGroup> groups = dtsim::hardware::keys::root_groups();
  for (const auto& g : dtsim::hardware::find_hardware_kind(kind)->key_groups())
    groups.push_back(g);
  for (const auto& g : groups)
    for (const auto* k : g.keys) {
      if (k == &dtsim::hardware::keys::kDescription)  // free text, not read
        continue;
      bool found = false;
      for (const auto& r : records)
        found = found || r.contains(pointer(g.path, k->name));
      EXPECT_TRUE(found) << kind << ": " << (g.path.empty() ? "" : g.path + ".") << k->name
                         << " is declared but the hardware record does not print it";
    }
}

}  // namespace

TEST(HardwareRecord, ListsEveryDeclaredKeyOfEachKind)
{
  expect_every_key("gpu-cluster", {record_of("hardware/dgx-h100.yaml"), record_of("hardware/gb200-nvl72.yaml")});
  expect_every_key("cerebras-wafer", {record_of("hardware/cerebras-cs2.yaml")});
}

TEST(HardwareRecord, AbsentKeysShowTheLoadersDefaults)
{
  const Json r = record_of("hardware/dgx-a100-80gb.yaml");
  EXPECT_EQ(r["network"]["topology"]["qps_per_connection"], 1);  // the file gives none: NCCL's default
  EXPECT_TRUE(r["device"]["peak_flops"]["nvfp4"].is_null());    // not offered
  EXPECT_EQ(r["node"]["topology"], "switch");
}

// The loader reports the key paths the file writes, at every level and --set values aside (`dtsim hardware` marks
// the others "(default)" without reading the file a second time).
TEST(HardwareRecord, TheLoaderListsTheKeysTheFileWrites)
{
  dtsim::Diagnostics diag;
  const auto hw = dtsim::hardware::load_hardware(dtsim::test::source_path("hardware/dgx-a100-80gb.yaml"), diag,
                                                 {"network.nic.latency=4 us", "network.topology.hash_seed=7"});
  ASSERT_TRUE(diag.empty()) << diag.items().front().str();
  for (const char* written : {"device", "device.power", "node.nvlink.goodput", "network.nic.latency",
                              "device.efficiency.attention.flash_attention_2.forward_d64"})
    EXPECT_EQ(hw.written_keys.count(written), 1u) << written;
  for (const char* absent : {"scale_up", "network.topology.hash_seed", "device.power.x", "device.peak_flops.fp8"})
    EXPECT_EQ(hw.written_keys.count(absent), 0u) << absent;
}

