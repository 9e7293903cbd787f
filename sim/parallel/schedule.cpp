#include "parallel/schedule.hpp"

#include <algorithm>
#include <vector>

#include <boost/graph/topological_sort.hpp>

#include "core/diagnostics.hpp"
#include "scenario/schedule_registry.hpp"

namespace dtsim::parallel {

PipelineSchedule build_schedule(scenario::Schedule kind, int64_t p, int64_t v, int64_t m)
{
  PipelineSchedule s;
  s.stages = p;
  s.chunks = v;
  s.microbatches = m;
  s.order.resize(size_t(p));
  s.group.resize(size_t(p));
  // Dense index (virtual stage, microbatch, direction) -> vertex; vertices are created on first use, in the
  // stages' orders (a std::map here took a tenth of a Megatron 1T run).
  constexpr UnitId kNone = ~UnitId(0);
  std::vector<UnitId> ids(size_t(p * v * m * 2), kNone);
  auto slot = [m](int64_t vstage, int64_t mb, bool bwd) { return size_t((vstage * m + mb) * 2 + (bwd ? 1 : 0)); };
  auto unit = [&](int64_t stage, int64_t chunk, int64_t mb, bool bwd) {
    UnitId& id = ids[slot(s.virtual_stage(stage, chunk), mb, bwd)];
    if (id == kNone)
      id = boost::add_vertex(Unit{stage, chunk, mb, bwd}, s.graph);
    return id;
  };
  const auto& def = scenario::schedule_def(kind);
  for (int64_t st = 0; st < p; ++st)
    for (const auto& u : def.stage_order(st, p, v, m)) {
      s.order[size_t(st)].push_back(unit(st, u.chunk, u.microbatch, u.backward));
      s.group[size_t(st)].push_back(u.group);
    }
  if (std::find(ids.begin(), ids.end(), kNone) != ids.end())
    throw InternalError("build_schedule: a unit appears in no stage's order");
  // Order edges: a stage runs its units one after the other.
  for (const auto& ord : s.order)
    for (size_t i = 1; i < ord.size(); ++i)
      boost::add_edge(ord[i - 1], ord[i], Dependency{EdgeKind::Order}, s.graph);
  // Data edges: activations flow forward through the virtual stages, gradients flow back; the last virtual
  // stage turns its forward into its backward (the loss).
  const int64_t nv = s.virtual_stages();
  for (int64_t vs = 0; vs < nv; ++vs)
    for (int64_t mb = 0; mb < m; ++mb) {
      if (vs + 1 < nv) {
        boost::add_edge(ids.at(slot(vs, mb, false)), ids.at(slot(vs + 1, mb, false)), Dependency{EdgeKind::Data},
                        s.graph);
        boost::add_edge(ids.at(slot(vs + 1, mb, true)), ids.at(slot(vs, mb, true)), Dependency{EdgeKind::Data},
                        s.graph);
      } else {
        boost::add_edge(ids.at(slot(vs, mb, false)), ids.at(slot(vs, mb, true)), Dependency{EdgeKind::Data}, s.graph);
      }
    }
  return s;
}

bool is_acyclic(const PipelineSchedule& s)
{
  std::vector<UnitId> out;
  try {
    boost::topological_sort(s.graph, std::back_inserter(out));
  } catch (const boost::not_a_dag&) {
    return false;
  }
  return true;
}

}  // namespace dtsim::parallel
