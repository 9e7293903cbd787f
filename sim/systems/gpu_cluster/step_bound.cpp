#include "systems/gpu_cluster/step_bound.hpp"

#include <algorithm>

#include <boost/range/iterator_range.hpp>

#include "core/diagnostics.hpp"

namespace dtsim::systems {

namespace {

double compute_seconds(const std::vector<replay::Step>& steps)
{
  double sum = 0;
  for (const replay::Step& st : steps)
    if (st.kind == replay::Step::Kind::Compute)
      sum += st.seconds;
  return sum;
}

}  // namespace

double step_time_lower_bound(const scenario::ScenarioSpec& s, const GpuStep& step, bool pairs)
{
  const parallel::PipelineSchedule& sched = step.schedule;
  const replay::StepProgram& prog = *step.program;
  const auto& g = sched.graph;
  const size_t units = num_vertices(g);
  std::vector<double> seconds(units), finish(units, -1.0);
  std::vector<std::vector<parallel::UnitId>> inputs(units);
  for (parallel::UnitId u = 0; u < units; ++u) {
    const parallel::Unit& x = g[u];
    seconds[u] = compute_seconds(replay::unit_steps(prog, x.stage, x.chunk, x.microbatch, x.backward, x.part));
    for (auto e : boost::make_iterator_range(out_edges(u, g)))
      if (g[e].kind == parallel::EdgeKind::Data)
        inputs[target(e, g)].push_back(u);
  }
  auto ready = [&](parallel::UnitId u) {
    return std::all_of(inputs[u].begin(), inputs[u].end(), [&](parallel::UnitId i) { return finish[i] >= 0; });
  };
  auto inputs_end = [&](parallel::UnitId u) {
    double t = 0;
    for (parallel::UnitId i : inputs[u])
      t = std::max(t, finish[i]);
    return t;
  };
  // Every stage walks its order as far as its inputs allow, round after round (the schedule is acyclic, so each
  // round moves some stage on until all are done).
  const size_t stages = sched.order.size();
  std::vector<size_t> pos(stages, 0);
  std::vector<double> free_at(stages, 0.0);
  for (bool moved = true; moved;) {
    moved = false;
    for (size_t st = 0; st < stages; ++st) {
      const auto& order = sched.order[st];
      while (pos[st] < order.size()) {
        const parallel::UnitId a = order[pos[st]];
        const bool pair = pairs && pos[st] + 1 < order.size() && sched.beside_previous[st][pos[st] + 1] != 0;
        if (!ready(a))
          break;
        if (!pair) {
          finish[a] = std::max(free_at[st], inputs_end(a)) + seconds[a];
          free_at[st] = finish[a];
          ++pos[st];
          moved = true;
          continue;
        }
        // Each lane from its own inputs (the second may read the first's output); both lanes' kernels share the
        // GPU after the earlier start.
        const parallel::UnitId b = order[pos[st] + 1];
        const double start_a = std::max(free_at[st], inputs_end(a));
        finish[a] = start_a + seconds[a];
        if (!ready(b)) {
          finish[a] = -1.0;
          break;
        }
        const double start_b = std::max(free_at[st], inputs_end(b));
        finish[b] = start_b + seconds[b];
        free_at[st] = std::max({finish[a], finish[b], std::min(start_a, start_b) + seconds[a] + seconds[b]});
        pos[st] += 2;
        moved = true;
      }
    }
  }
  double end = 0;
  for (size_t st = 0; st < stages; ++st) {
    if (pos[st] < sched.order[st].size())
      throw InternalError("step_time_lower_bound: the schedule's stage " + std::to_string(st) + " cannot proceed");
    end = std::max(end, free_at[st] + prog.optimizer_seconds[st]);
  }
  return end + std::max(0.0, s.stack.factors.step_overhead_s);
}

}  // namespace dtsim::systems
