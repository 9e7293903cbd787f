#include "parallel/schedule.hpp"

#include <algorithm>
#include <vector>

#include <boost/graph/topological_sort.hpp>

#include "core/diagnostics.hpp"
#include "scenario/schedule_registry.hpp"

namespace dtsim::parallel {

PipelineSchedule build_schedule(const std::string& schedule_name, int64_t p, int64_t v, int64_t microbatches,
                                const scenario::PassTimes& times)
{
  const auto& def = scenario::schedule_def(schedule_name);
  PipelineSchedule s;
  s.stages = p;
  s.chunks = v;
  s.two_directions = def.two_directions;
  s.placement = def.chunk_placement;
  s.microbatches = def.two_directions ? microbatches / 2 : microbatches;
  const int64_t m = s.microbatches;
  s.order.resize(size_t(p));
  s.group.resize(size_t(p));
  s.beside_previous.resize(size_t(p));
  // Dense index (virtual stage, microbatch, pass) -> vertex, pass 0 forward, 1 backward (or its input part),
  // 2 its weight part; vertices are created on first use, in the stages' orders (a std::map here took a tenth of
  // a Megatron 1T run).
  const int64_t passes = def.splits_backward ? 3 : 2;
  constexpr UnitId kNone = ~UnitId(0);
  std::vector<UnitId> ids(size_t(p * v * m * passes), kNone);
  std::vector<Unit> units;  // by UnitId, in order of creation
  units.reserve(ids.size());
  std::vector<std::pair<UnitId, UnitId>> edges;
  std::vector<Dependency> kinds;
  auto slot = [m, passes](int64_t vstage, int64_t mb, int pass) { return size_t((vstage * m + mb) * passes + pass); };
  auto pass_of = [](const scenario::StageUnit& u) {
    return !u.backward ? 0 : u.part == scenario::BackwardPart::Weight ? 2 : 1;
  };
  const auto orders = def.timed_stage_orders && !times.empty() ? def.timed_stage_orders(p, v, microbatches, times)
                                                               : def.stage_orders(p, v, microbatches);
  for (int64_t st = 0; st < p; ++st)
    for (const auto& u : orders[size_t(st)]) {
      UnitId& id = ids[slot(s.virtual_stage(st, u.chunk), u.microbatch, pass_of(u))];
      if (id == kNone) {
        id = UnitId(units.size());
        units.push_back(Unit{st, u.chunk, u.microbatch, u.backward, u.part});
      }
      s.order[size_t(st)].push_back(id);
      s.group[size_t(st)].push_back(u.group);
      s.beside_previous[size_t(st)].push_back(u.beside_previous ? 1 : 0);
    }
  // Every forward and backward once; a W exactly where its backward was split.
  auto split_at = [&](size_t i) {
    return ids[i - 1] != kNone && units[ids[i - 1]].part == scenario::BackwardPart::Input;
  };
  for (size_t i = 0; i < ids.size(); ++i)
    if ((ids[i] == kNone) != (passes == 3 && i % 3 == 2 && !split_at(i)))
      throw InternalError("build_schedule: a unit appears in no stage's order, or a W without its B");
  // Order edges: a stage runs its units one after the other.
  for (const auto& ord : s.order)
    for (size_t i = 1; i < ord.size(); ++i) {
      edges.push_back({ord[i - 1], ord[i]});
      kinds.push_back(Dependency{EdgeKind::Order});
    }
  // Data edges along each chain: activations flow forward through its virtual stages, gradients flow back (through
  // the input parts, where the backward is split: a W unit needs only its own stage's B); the chain's last virtual
  // stage turns its forward into its backward (the loss).
  const int64_t len = s.chain_length();
  auto data = [&](size_t from, size_t to) {
    edges.push_back({ids.at(from), ids.at(to)});
    kinds.push_back(Dependency{EdgeKind::Data});
  };
  for (int64_t vs = 0; vs < s.virtual_stages(); ++vs)
    for (int64_t mb = 0; mb < m; ++mb) {
      if ((vs + 1) % len != 0) {
        data(slot(vs, mb, 0), slot(vs + 1, mb, 0));
        data(slot(vs + 1, mb, 1), slot(vs, mb, 1));
      } else {
        data(slot(vs, mb, 0), slot(vs, mb, 1));
      }
      if (passes == 3 && ids[slot(vs, mb, 2)] != kNone)
        data(slot(vs, mb, 1), slot(vs, mb, 2));
    }
  s.graph = ScheduleGraph(boost::edges_are_unsorted_multi_pass, edges.begin(), edges.end(), kinds.begin(),
                          units.size());
  for (UnitId id = 0; id < units.size(); ++id)
    s.graph[id] = units[id];
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
