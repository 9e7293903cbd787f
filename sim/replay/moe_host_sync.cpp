#include "replay/moe_host_sync.hpp"

#include <algorithm>

namespace dtsim::replay {

double moe_dispatch_sync_seconds(const std::vector<model::Segment>& forward, const kernels::ComputeModel& cm,
                                 model::TokenDispatcher dispatcher, bool preprocess_graphed)
{
  // Where the stack gives no resume time the caller prices no wait (scenario::moe_dispatch_wait); 0 comes out anyway.
  const double resume = cm.sync_resume_seconds();
  // The flex dispatchers wait after their own preprocessing kernel, the last thing queued: nothing hides it.
  if (dispatcher != model::TokenDispatcher::AllToAll || preprocess_graphed)
    return resume;
  // The permutation is queued before the host waits: its kernels run while the copy lands and the host dispatches.
  double permute = 0;
  for (const auto& seg : forward) {
    if (seg.is_collective() && seg.collective == model::TpCollective::AllToAll)
      break;
    for (const auto& op : seg.ops)
      if (op.name == "dispatch_permute")
        permute += cm.seconds(op);
  }
  return std::max(0.0, resume - permute);
}

void insert_moe_dispatch_sync(std::vector<Step>& steps, size_t from, double seconds, const std::string& label,
                              bool recompute)
{
  if (seconds <= 0)
    return;
  auto it = std::find_if(steps.begin() + long(from), steps.end(),
                         [](const Step& st) { return st.kind == Step::Kind::EpCollective; });
  if (it == steps.end())
    return;
  Step wait;
  wait.kind = Step::Kind::Compute;
  wait.seconds = seconds;
  wait.recompute = recompute;
  wait.label = label;
  steps.insert(it, std::move(wait));
}

}  // namespace dtsim::replay
