#include "hardware/hardware_keys.hpp"

#include "collectives/algorithm_registry.hpp"

namespace dtsim::hardware::keys {

using namespace config::declaring;

const Key kName = Key::string("name", kRequired, "", "shown in reports");
// The kinds are the registered wings' (systems::install); the reader checks the name against them.
const Key kKind = Key::string("kind", kRequired, "",
                              "the kind of system, the name of the wing that reads the sections below and simulates "
                              "it (docs/architecture.md, \"Systems as wings\"); the sections below list each kind");
const Key kDescription = Key::string("description", kOptional, "", "free text, not read");
const Key kDefaultStack = Key::string("default_stack", kOptional, "no stack",
                                      "the software stack of scenarios that name none (hardware/stacks/*.yaml, "
                                      "relative to this file)");
const Key kPeakFlops = Key::section("peak_flops", kRequired, "dense peak per precision, at least one");

const Key kCollectives = Key::section("collectives", kOptional, "NCCL's choices forced (hardware or stack file)");
const Key kCollectiveAlgorithm =
    Key::choice("algorithm", collectives::algorithm_choices(), kOptional, "NCCL's choice",
                "force NCCL's collective algorithm (the stack's wins); auto: NCCL's choice, the lowest predicted time "
                "for the message size and group shape. Where the forced algorithm cannot run a collective (tree or "
                "NVLS for a reduce-scatter, NVLS without NVSwitch 3) the ring runs, as with NCCL's per-function "
                "NCCL_ALGO lists");
const Key kCollectiveProtocol = Key::choice("protocol", collectives::protocol_choices(), kOptional, "NCCL's choice",
                                            "force NCCL's protocol likewise (NVLS algorithms run Simple only)");

const std::vector<Key>& peak_flops_keys()
{
  static const std::vector<Key> keys = [] {
    std::vector<Key> v;
    for (const char* p : {"fp32", "tf32", "fp16", "bf16", "fp8"})
      v.push_back(Key::quantity(p, Dimension::FlopRate, limits::kFlopRate, kOptional, "not offered",
                                std::string("dense peak at ") + p));
    v.push_back(Key::quantity("mxfp8", Dimension::FlopRate, limits::kFlopRate, kOptional, "not offered",
                              "dense peak of MXFP8 block-scaled GEMMs (E4M3 data, an E8M0 scale per 32 elements; "
                              "Blackwell and later): training.precision mxfp8 needs it"));
    v.push_back(Key::quantity("nvfp4", Dimension::FlopRate, limits::kFlopRate, kOptional, "not offered",
                              "dense peak of NVFP4 block-scaled GEMMs (E2M1 data, an E4M3 scale per 16 elements; "
                              "Blackwell and later): training.precision nvfp4 needs it"));
    return v;
  }();
  return keys;
}

std::vector<const Key*> peak_flops_key_list()
{
  std::vector<const Key*> v;
  for (const Key& k : peak_flops_keys())
    v.push_back(&k);
  return v;
}

std::vector<config::KeyGroup> root_groups() { return {{"", {&kName, &kKind, &kDescription, &kDefaultStack}}}; }

}  // namespace dtsim::hardware::keys
