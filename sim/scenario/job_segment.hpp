#pragma once
/// `placement.segment`: the nodes of each scale-up (NVLink) domain a job holds, as Slurm's --segment asks. A
/// property of the job's placement, not of the hardware: a GB200 NVL72 rack stays 18 trays in its hardware file while
/// a job launched with --segment 16 uses 16 of them per rack.
#include <cstdint>
#include <string>

#include "core/diagnostics.hpp"
#include "scenario/scenario_spec.hpp"

namespace dtsim::scenario {

/// Applies a segment of `segment` nodes (given at `where`) to a scenario whose hardware is loaded: on a GPU cluster,
/// checks it against the domain's nodes and, where it fits, makes hardware.scale_up.nodes the segment (the domain
/// the job sees) and records both in s.placement. Other kinds of system have no scale-up domain: nothing is applied
/// (their rules list the key as unread, so the scenario is warned).
void take_segment(ScenarioSpec& s, int64_t segment, const Origin& where, Diagnostics& diag);

/// ", of the domain's 18: placement.segment" where a segment is given, else "": what the reports add after the
/// nodes of a domain.
std::string segment_note(const ScenarioSpec& s);

}  // namespace dtsim::scenario
