#include "scenario/job_segment.hpp"

namespace dtsim::scenario {

void take_segment(ScenarioSpec& s, int64_t segment, const Origin& where, Diagnostics& diag)
{
  if (s.hardware.system)  // not a GPU cluster: no scale-up domain
    return;
  const int64_t domain_nodes = s.hardware.scale_up.nodes;
  if (segment > domain_nodes) {
    const std::string domain =
        s.hardware.scale_up.from_section
            ? "scale_up.nodes in " + s.hardware.file + ": " + std::to_string(domain_nodes)
            : std::to_string(domain_nodes) + ": " + s.hardware.file +
                  " has no scale_up section, each node is its own NVLink domain";
    diag.add(where, "placement.segment",
             "expected at most the nodes of one NVLink domain (" + domain + "), got " + std::to_string(segment));
    return;
  }
  s.placement.segment = segment;
  s.where["placement.segment"] = where;
  s.placement.domain_nodes = domain_nodes;
  s.hardware.scale_up.nodes = static_cast<int>(segment);
}

std::string segment_note(const ScenarioSpec& s)
{
  if (s.placement.segment == 0)
    return "";
  return ", of the domain's " + std::to_string(s.placement.domain_nodes) + ": placement.segment";
}

}  // namespace dtsim::scenario
