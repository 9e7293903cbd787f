#include "scenario/keys_without_effect.hpp"

#include <sstream>

#include "model/token_dispatcher.hpp"
#include "scenario/moe_dispatch_wait.hpp"
#include "scenario/scenario_rules.hpp"

namespace dtsim::scenario {

namespace {

// The node at `dotted` ("training.fp8_recipe") in `root`, undefined when the file does not give it. Read through
// const nodes: a non-const operator[] would add the key.
YAML::Node given(const YAML::Node& root, const std::string& dotted)
{
  std::vector<YAML::Node> chain{root};
  std::stringstream ss(dotted);
  for (std::string part; std::getline(ss, part, '.');) {
    const YAML::Node& at = chain.back();
    if (!at.IsMap())
      return YAML::Node(YAML::NodeType::Undefined);
    chain.push_back(at[part]);
    if (!chain.back().IsDefined())
      return YAML::Node(YAML::NodeType::Undefined);
  }
  return chain.back();
}

std::string value_text(const YAML::Node& n)
{
  if (n.IsScalar())
    return n.Scalar();
  YAML::Emitter out;
  out << YAML::Flow << n;
  return out.c_str();
}

// Why parallel.moe_preprocess_graphed changes nothing in `s` (the first reason found), or "" where it acts.
std::string preprocess_graphed_without_effect(const ScenarioSpec& s)
{
  const MoeDispatchWait wait = moe_dispatch_wait(s);
  if (wait == MoeDispatchWait::NoExperts)
    return "the model has no experts: no dispatcher";
  // The flex dispatchers' wait follows their own preprocessing kernel, graphed or not (replay/moe_host_sync.hpp).
  if (s.parallel.moe_dispatcher != model::TokenDispatcher::AllToAll)
    return "parallel.moe_dispatcher is " + model::token_dispatcher_names()[size_t(s.parallel.moe_dispatcher)] +
           ", whose flex dispatch waits after its own preprocessing kernel, graphed or not";
  switch (wait) {
  case MoeDispatchWait::Priced:
  case MoeDispatchWait::NoExperts:
    return "";
  case MoeDispatchWait::PairedUnits:
    return "the paired schedule (parallel.ep_overlap) queues the other unit's kernels behind that wait, which is "
           "not priced";
  case MoeDispatchWait::NoSyncResume:
    return "the stack's host.sync_resume is 0 (" + (s.stack.file.empty() ? std::string("no stack") : s.stack.file) +
           "): the GPU does not idle at that wait";
  }
  return "";
}

}  // namespace

std::vector<Diagnostic> keys_without_effect(const config::YamlFile& file, const ScenarioSpec& s)
{
  std::vector<UnreadKey> unread;
  // Transformer Engine's fp8 recipes (delayed, current) scale the per-tensor fp8 GEMMs of precision fp8; mxfp8 and
  // nvfp4 scale per block as their own recipes fix, and 16- and 32-bit precisions cast nothing
  // (model/transformer.cpp reads the recipe under precision fp8 only).
  if (s.training.precision != "fp8")
    unread.push_back({"training.fp8_recipe",
                      "the recipe scales the GEMMs of precision fp8 (Transformer Engine's per-tensor scaling), and "
                      "precision is " + s.training.precision +
                          (s.training.precision == "mxfp8" || s.training.precision == "nvfp4"
                               ? ", which scales per block as its own recipe fixes"
                               : ", which casts nothing to fp8")});
  // The seed draws per-device speeds and kernel jitter (docs/variability.md); with neither spread set nothing is drawn.
  if (!s.variability.on())
    unread.push_back({"variability.seed",
                      "the seed draws device speeds and kernel jitter, and variability.device_spread and "
                      "variability.kernel_jitter are 0: nothing is drawn"});
  // The graphed preprocessing moves the host wait of Megatron-Core's alltoall dispatcher (replay/moe_host_sync.hpp),
  // which the replay prices only where scenario/moe_dispatch_wait.hpp says so; the flex dispatchers' wait follows
  // their own kernel, graphed or not.
  if (const std::string why = preprocess_graphed_without_effect(s); !why.empty())
    unread.push_back({"parallel.moe_preprocess_graphed",
                      "the graphed preprocessing moves the host's wait for the dispatch splits of the alltoall "
                      "dispatcher, and " + why});
  for (auto& k : scenario_rules(s).unread_keys(s))
    unread.push_back(std::move(k));
  std::vector<Diagnostic> warnings;
  for (const auto& k : unread) {
    const YAML::Node node = given(file.root(), k.key);
    if (node.IsDefined())
      warnings.push_back(
          {file.origin(node, k.key), k.key, "'" + value_text(node) + "' has no effect: " + k.why});
  }
  return warnings;
}

}  // namespace dtsim::scenario
