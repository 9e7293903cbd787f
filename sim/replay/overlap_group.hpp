#pragma once
/// Which steps run side by side as one overlap group: a kernel with the collectives issued beside it. One rule for the
/// replay (Driver::overlap_group_at, which runs the group) and the search's lower bound
/// (systems::step_time_lower_bound, which prices it), so that the bound sees the groups the replay runs.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "replay/step_program.hpp"

namespace dtsim::replay {

/// Whether the steps from `at` on form an overlap group under parallel.tp_overlap `tp_overlap` and context-parallel
/// size `cp`: a TP collective issued beside the next kernel; a non-blocking context-parallel ring with the attention it
/// feeds or drains; with tp_overlap, [all-gather] kernel [reduce-scatter]. `end` is then one past its last step.
bool overlap_group_end(const std::vector<Step>& steps, size_t at, bool tp_overlap, int64_t cp, size_t& end);

}  // namespace dtsim::replay
