#pragma once
/// The proven lower bound on the step time of every plan a search may simulate (SystemKind::lower_bound_step_s),
/// computed in child processes: building each plan's step program and schedule for its bound is most of a search's
/// CPU (on GPT-3 175B's full space, 6,137 plans, about 70 % of it; docs/performance.md), and serially in the parent
/// it held back the first simulation (DeepSeek-V3's full space: over 2 minutes).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "app/search_plans.hpp"
#include "app/search_replay_key.hpp"

namespace dtsim::app {

struct PlanBounds {
  std::vector<double> bound;  ///< per plan; 0 where it failed
  /// Plans whose schedule cannot be built (an InternalError, a bug): they are counted and named, not simulated.
  std::vector<char> failed;
  std::map<std::string, int64_t> failures;  ///< message -> plans
  std::string first_failed_plan;            ///< the first such plan in the list, described
};

/// Every plan's bound, in chunks of plans, one chunk per child, `workers` children at a time (split over the MPI
/// ranks when there are several; every rank gets the same bounds, bit for bit). Each bound is the same double as
/// computed in this process: the same code on the same spec. A chunk whose child failed otherwise than by an
/// InternalError is computed again here, so that its error (a ConfigError, say) reaches the user as before. One
/// bound is computed per bound class of `keys` (search_replay_key.hpp) and given to every plan of the class.
PlanBounds plan_bounds(const SearchPlans& plans, const ReplayKeys& keys, int workers);

}  // namespace dtsim::app
