// `dtsim stack FILE` prints every key a stack file may give (stack/stack_record.hpp): the record lists each declared
// key (stack/stack_keys.cpp) under its path, so that the golden records of the shipped stacks (tests/golden/stacks/)
// pin every key, and a key declared later cannot be left out of them.
#include <gtest/gtest.h>

#include "core/diagnostics.hpp"
#include "stack/stack_keys.hpp"
#include "stack/stack_record.hpp"
#include "stack/stack_yaml.hpp"
#include "test_paths.hpp"

TEST(StackRecord, ListsEveryDeclaredKey)
{
  const nlohmann::ordered_json record = dtsim::stack::stack_record(dtsim::stack::StackSpec{});
  for (const auto& group : dtsim::stack::keys::groups())
    for (const auto* k : group.keys) {
      if (k == &dtsim::stack::keys::kDescription)  // free text, not read
        continue;
      const std::string path = group.path.empty() ? k->name : group.path + "." + k->name;
      const auto pointer =
          nlohmann::ordered_json::json_pointer("/" + (group.path.empty() ? "" : group.path + "/") + k->name);
      EXPECT_TRUE(record.contains(pointer)) << path << " is declared but stack_record does not print it";
    }
  // The collectives a stack may force: the hardware file's keys, read from stacks too.
  EXPECT_TRUE(record.contains(nlohmann::ordered_json::json_pointer("/collectives/algorithm")));
  EXPECT_TRUE(record.contains(nlohmann::ordered_json::json_pointer("/collectives/protocol")));
}

TEST(StackRecord, AbsentKeysShowTheLoadersDefaults)
{
  const nlohmann::ordered_json r = dtsim::stack::stack_record(dtsim::stack::StackSpec{});
  EXPECT_EQ(r["factors"]["compute"], 1.0);
  EXPECT_EQ(r["kernels"]["attention"], "unfused");
  EXPECT_EQ(r["memory"]["optimizer_state"], "fp32");
  EXPECT_TRUE(r["overlap"]["dp_overlap"].is_null());  // the scenario's default
  EXPECT_EQ(r["collectives"]["algorithm"], "auto");
}

// The loader reports the key paths the file writes (`dtsim stack` marks the others "(default)" without reading the
// file a second time).
TEST(StackRecord, TheLoaderListsTheKeysTheFileWrites)
{
  dtsim::Diagnostics diag;
  const auto st = dtsim::stack::load_stack(dtsim::test::source_path("hardware/stacks/megatron-lm-2021.yaml"), diag);
  ASSERT_TRUE(diag.empty());
  for (const char* written : {"name", "kernels", "kernels.attention", "memory.cuda_context", "nccl"})
    EXPECT_EQ(st.written_keys.count(written), 1u) << written;
  for (const char* absent : {"kernels.fp8_recipe", "kernels.attention.x", "description.x"})
    EXPECT_EQ(st.written_keys.count(absent), 0u) << absent;
  EXPECT_TRUE(dtsim::stack::StackSpec{}.written_keys.empty());
}
