#include "parallel/schedule.hpp"

#include <algorithm>
#include <vector>

#include <boost/graph/topological_sort.hpp>

#include "core/diagnostics.hpp"

namespace dtsim::parallel {

namespace {

// Megatron-LM's chunk and microbatch of the k-th forward (or backward) unit of a stage under interleaving:
// groups of `stages` microbatches go through chunk 0, then chunk 1, ...
std::pair<int64_t, int64_t> interleaved_unit(int64_t k, int64_t stages, int64_t chunks, bool backward)
{
  int64_t group = k % (stages * chunks);
  int64_t chunk = group / stages;
  if (backward)
    chunk = chunks - 1 - chunk;
  int64_t mb = (k / (stages * chunks)) * stages + k % stages;
  return {chunk, mb};
}

}  // namespace

PipelineSchedule build_schedule(scenario::Schedule kind, int64_t p, int64_t v, int64_t m)
{
  PipelineSchedule s;
  s.stages = p;
  s.chunks = v;
  s.microbatches = m;
  s.order.resize(size_t(p));
  s.group.resize(size_t(p));
  // Dense index (virtual stage, microbatch, direction) -> vertex; vertices are still created on first use, in
  // the same order as before (a std::map here took a tenth of a Megatron 1T run).
  constexpr UnitId kNone = ~UnitId(0);
  std::vector<UnitId> ids(size_t(p * v * m * 2), kNone);
  auto slot = [m](int64_t vstage, int64_t mb, bool bwd) { return size_t((vstage * m + mb) * 2 + (bwd ? 1 : 0)); };
  auto unit = [&](int64_t stage, int64_t chunk, int64_t mb, bool bwd) {
    UnitId& id = ids[slot(s.virtual_stage(stage, chunk), mb, bwd)];
    if (id == kNone)
      id = boost::add_vertex(Unit{stage, chunk, mb, bwd}, s.graph);
    return id;
  };
  for (int64_t st = 0; st < p; ++st) {
    auto& ord = s.order[size_t(st)];
    if (kind == scenario::Schedule::GPipe) {
      for (int64_t c = 0; c < v; ++c)
        for (int64_t mb = 0; mb < m; ++mb)
          ord.push_back(unit(st, c, mb, false));
      for (int64_t c = v - 1; c >= 0; --c)
        for (int64_t mb = 0; mb < m; ++mb)
          ord.push_back(unit(st, c, mb, true));
      for (size_t i = 0; i < ord.size(); ++i)
        s.group[size_t(st)].push_back(int64_t(i));
      continue;
    }
    const int64_t total = m * v;
    int64_t warmup = kind == scenario::Schedule::Interleaved ? (p - st - 1) * 2 + (v - 1) * p : p - st - 1;
    warmup = std::min(warmup, total);
    auto fwd = [&](int64_t k) {
      auto [c, mb] = v > 1 ? interleaved_unit(k, p, v, false) : std::make_pair(int64_t(0), k);
      return unit(st, c, mb, false);
    };
    auto bwd = [&](int64_t k) {
      auto [c, mb] = v > 1 ? interleaved_unit(k, p, v, true) : std::make_pair(int64_t(0), k);
      return unit(st, c, mb, true);
    };
    auto& grp = s.group[size_t(st)];
    int64_t g = 0;
    for (int64_t k = 0; k < warmup; ++k) {
      ord.push_back(fwd(k));
      grp.push_back(g++);
    }
    const bool pairs = kind == scenario::Schedule::Interleaved;
    for (int64_t i = 0; i < total - warmup; ++i) {
      ord.push_back(fwd(warmup + i));
      grp.push_back(g);
      if (!pairs)
        ++g;
      ord.push_back(bwd(i));
      grp.push_back(g++);
    }
    for (int64_t i = total - warmup; i < total; ++i) {
      ord.push_back(bwd(i));
      grp.push_back(g++);
    }
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
