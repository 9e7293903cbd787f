// Every declared key of a scenario's `parallel` and `training` sections enters the search's replay key
// (app::plan_replay_key): a plan that differs from another in any of them is simulated on its own, never given the
// other's step. The key lists the plan's fields by hand (app/search_replay_key.cpp), and a field once went missing
// (training.fp8_norm_amax); this test fails for a declared key that has no case below, and for a case whose change
// leaves the key as it was.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "app/load.hpp"
#include "app/search_replay_key.hpp"
#include "core/diagnostics.hpp"
#include "scenario/scenario_keys.hpp"
#include "test_paths.hpp"

namespace {

const std::string kScenario = "tests/unit/data/replay-key-moe.yaml";

// How to change one key alone: the overrides that make the change valid (`context`), then the change.
struct Change {
  std::vector<std::string> context;
  std::vector<std::string> change;
};

// One case per declared key, by its path.
const std::map<std::string, Change>& changes()
{
  static const std::map<std::string, Change> c = {
      {"parallel.tp", {{}, {"parallel.tp=4"}}},
      {"parallel.pp", {{}, {"parallel.pp=4"}}},
      // dp * tp * pp * cp is the device count: dp alone changes with it.
      {"parallel.dp", {{}, {"devices=64", "parallel.dp=16"}}},
      // Four layers on two stages: vpp 2 under the interleaved schedule only (whose name is not part of this key).
      {"parallel.vpp", {{}, {"schedule=interleaved-1f1b", "parallel.vpp=2"}}},
      // A model with experts needs sp at tp 2: the dense model of the same shape.
      {"parallel.sp", {{"model=../../../models/tiny-gpt.yaml", "parallel.ep=1"}, {"parallel.sp=false"}}},
      {"parallel.dp_overlap", {{}, {"parallel.dp_overlap=false"}}},
      {"parallel.dp_bucket", {{}, {"parallel.dp_bucket=50 MiB"}}},
      {"parallel.pp_overlap", {{}, {"parallel.pp_overlap=true"}}},
      {"parallel.expert_tp", {{}, {"parallel.expert_tp=1"}}},
      {"parallel.ep_overlap", {{"schedule=interleaved-1f1b", "parallel.vpp=2"}, {"parallel.ep_overlap=true"}}},
      {"parallel.param_gather_overlap", {{"parallel.zero=1"}, {"parallel.param_gather_overlap=true"}}},
      {"parallel.reshard_after_forward",
       {{"parallel.zero=3", "parallel.pp=1"}, {"parallel.reshard_after_forward=false"}}},
      {"parallel.defer_gradient_sync", {{"parallel.zero=3", "parallel.pp=1"}, {"parallel.defer_gradient_sync=true"}}},
      {"parallel.stage_layers", {{}, {"parallel.stage_layers=[1, 3]"}}},
      {"parallel.tp_async_allreduce", {{}, {"parallel.tp_async_allreduce=false"}}},
      {"parallel.tp_overlap", {{}, {"parallel.tp_overlap=true"}}},
      {"parallel.ub_proj_fprop_method", {{}, {"parallel.ub_proj_fprop_method=ring_exchange"}}},
      {"parallel.ub_fc2_fprop_method", {{}, {"parallel.ub_fc2_fprop_method=ring_exchange"}}},
      {"parallel.ub_proj_fprop_sms", {{}, {"parallel.ub_proj_fprop_sms=24"}}},
      {"parallel.ub_fc2_fprop_sms", {{}, {"parallel.ub_fc2_fprop_sms=24"}}},
      {"parallel.ub_proj_fprop_sm_margin", {{}, {"parallel.ub_proj_fprop_sm_margin=true"}}},
      {"parallel.ub_fc2_fprop_sm_margin", {{}, {"parallel.ub_fc2_fprop_sm_margin=true"}}},
      {"parallel.ep", {{}, {"parallel.ep=2"}}},
      {"parallel.moe_dispatcher", {{}, {"parallel.moe_dispatcher=deepep"}}},
      {"parallel.moe_preprocess_graphed", {{}, {"parallel.moe_preprocess_graphed=true"}}},
      {"parallel.cp", {{}, {"parallel.cp=2"}}},
      {"parallel.zero", {{}, {"parallel.zero=1"}}},
      {"training.global_batch", {{}, {"training.global_batch=128"}}},
      {"training.micro_batch", {{}, {"training.micro_batch=1"}}},
      {"training.seq_len", {{}, {"training.seq_len=256"}}},
      {"training.expert_imbalance", {{}, {"training.expert_imbalance=1.5"}}},
      {"training.expert_capacity_factor", {{}, {"training.expert_capacity_factor=1.25"}}},
      {"training.flash_attention", {{}, {"training.flash_attention=true"}}},
      {"training.precision", {{}, {"training.precision=fp8"}}},
      {"training.recompute", {{}, {"training.recompute=selective"}}},
      {"training.recompute_layers", {{"training.recompute=full"}, {"training.recompute_layers=1"}}},
      {"training.saved_activations",
       {{"model=../../../models/tiny-gpt.yaml", "parallel.ep=1", "training.recompute=full"},
        {"training.saved_activations=torchtitan-op"}}},
      {"training.fp8_recipe", {{"training.precision=fp8"}, {"training.fp8_recipe=current"}}},
      {"training.cross_entropy", {{}, {"training.cross_entropy=fused-te"}}},
      {"training.optimizer_state", {{}, {"training.optimizer_state=bf16"}}},
      {"training.fp8_params", {{"training.precision=fp8"}, {"training.fp8_params=true"}}},
      {"training.fp8_norm_amax",
       {{"training.precision=fp8", "training.fp8_recipe=current"}, {"training.fp8_norm_amax=true"}}},
      {"training.grad_accumulation_fusion", {{}, {"training.grad_accumulation_fusion=false"}}},
      {"training.tokens", {{}, {"training.tokens=1T"}}},
  };
  return c;
}

std::string key_of(std::vector<std::string> sets)
{
  return dtsim::app::plan_replay_key(dtsim::app::load_for_simulation(dtsim::test::source_path(kScenario), sets));
}

std::string joined(const std::vector<std::string>& v)
{
  std::string s;
  for (const auto& x : v)
    s += (s.empty() ? "" : " ") + x;
  return s;
}

}  // namespace

TEST(SearchReplayKeyKeys, EveryDeclaredParallelAndTrainingKeyEntersTheKey)
{
  size_t checked = 0;
  for (const auto& group : dtsim::scenario::keys::groups()) {
    if (group.path != "parallel" && group.path != "training")
      continue;
    for (const auto* k : group.keys) {
      const std::string path = group.path + "." + k->name;
      SCOPED_TRACE(path);
      const auto it = changes().find(path);
      if (it == changes().end()) {
        ADD_FAILURE() << path << " is declared but has no case here: enter its field in plan_fields "
                      << "(sim/app/search_replay_key.cpp) and add a case that changes it alone";
        continue;
      }
      std::vector<std::string> changed = it->second.context;
      changed.insert(changed.end(), it->second.change.begin(), it->second.change.end());
      std::string before, after;
      try {
        before = key_of(it->second.context);
        after = key_of(changed);
      } catch (const dtsim::ConfigError& e) {
        ADD_FAILURE() << "the case's overrides are not a valid plan (" << joined(changed) << "): " << e.what();
        continue;
      }
      EXPECT_NE(before, after) << joined(it->second.change) << " leaves the replay key as it was";
      ++checked;
    }
  }
  EXPECT_EQ(checked, changes().size()) << "a case names a key that is not declared";
}

// The documented exception (app/search_replay_key.hpp): under fused attention `selective` recomputes nothing and
// replays as `none`.
TEST(SearchReplayKeyKeys, SelectiveUnderFusedAttentionReplaysAsNone)
{
  EXPECT_EQ(key_of({"training.flash_attention=true", "training.recompute=none"}),
            key_of({"training.flash_attention=true", "training.recompute=selective"}));
}
