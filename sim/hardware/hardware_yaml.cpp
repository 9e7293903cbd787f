#include "hardware/hardware_yaml.hpp"

#include "config/map_reader.hpp"
#include "hardware/hardware_keys.hpp"
#include "hardware/hardware_kind.hpp"

namespace dtsim::hardware {

using config::MapReader;
namespace k = keys;

std::map<std::string, double> read_peak_flops(MapReader& parent)
{
  std::map<std::string, double> peaks;
  MapReader peak = parent.map(k::kPeakFlops);
  for (const config::Key& p : k::peak_flops_keys())
    if (auto v = peak.quantity(p))
      peaks[p.name] = *v;
  if (peak.valid() && peaks.empty())
    parent.error(k::kPeakFlops.name, "expected at least one of fp32, tf32, fp16, bf16, fp8");
  peak.finish();
  return peaks;
}

CollectiveForce read_collective_force(MapReader& parent)
{
  CollectiveForce f;
  MapReader c = parent.map(k::kCollectives);
  f.algorithm = c.choice(k::kCollectiveAlgorithm).value_or("");
  f.protocol = c.choice(k::kCollectiveProtocol).value_or("");
  c.finish();
  return f;
}

// The root's own keys, then the sections of its kind, read by the kind's wing. `kind` is the kind that read them,
// or nullptr when the kind is missing or unknown (the one error then: the sections to read depend on it).
static HardwareSpec parse_hardware(const std::string& path, Diagnostics& diag, const std::vector<std::string>& sets,
                                   const HardwareKind*& kind)
{
  HardwareSpec hw;
  hw.file = path;
  kind = nullptr;
  auto file = config::YamlFile::load(path, diag);
  if (!file.ok())
    return hw;
  hw.written_keys = file.key_paths();
  file.apply_overrides(sets, "hardware.", diag);
  MapReader root(file, file.root(), "", diag);
  hw.name = root.string(k::kName).value_or("");
  root.accept({k::kDescription.name});
  if (auto st = root.string(k::kDefaultStack))
    hw.default_stack = file.resolve(*st);
  const std::vector<std::string> kinds = hardware_kind_names();
  hw.kind = root.choice(k::kKind.name, kinds, true).value_or("");
  kind = find_hardware_kind(hw.kind);
  if (!kind) {
    for (const auto& name : kinds)
      for (const auto& group : find_hardware_kind(name)->key_groups())
        root.accept({group.path.substr(0, group.path.find('.'))});
    root.finish();
    return hw;
  }
  kind->read_sections(root, hw);
  return hw;
}

HardwareSpec load_hardware(const std::string& path, Diagnostics& diag, const std::vector<std::string>& sets)
{
  const HardwareKind* kind = nullptr;
  const size_t before = diag.items().size();
  HardwareSpec hw = parse_hardware(path, diag, sets, kind);
  if (!kind || diag.items().size() != before)
    return hw;
  // The kind's checks that need the file as written (a what-if on a link's bandwidth moves its goodput with it).
  HardwareSpec written = hw;
  if (!sets.empty()) {
    Diagnostics scratch;
    const HardwareKind* same = nullptr;
    written = parse_hardware(path, scratch, {}, same);
    if (!scratch.empty())
      written = hw;
  }
  kind->check(hw, written, diag);
  return hw;
}

}  // namespace dtsim::hardware
