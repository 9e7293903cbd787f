#include "app/search_bounds.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "app/mpi_workers.hpp"
#include "core/diagnostics.hpp"
#include "parallel/plan_space.hpp"
#include "systems/system_kinds.hpp"

namespace dtsim::app {

namespace {

// Chunks per worker process: a few large ones rather than many of 64 plans (DeepSeek-V3's full space: 564 forks, each
// copying the page tables of a parent that then held every plan whole, about 400 MB; SearchPlans keeps them small
// since); more than one, so that a worker that drew the slower bounds (ZB-V's list scheduler) does not finish long
// after the other.
constexpr size_t kChunksPerWorker = 4;

// The plans of chunk `c` of `chunks`: c, c + chunks, c + 2 chunks, ... Strided, so that every chunk holds plans of
// every shape alike (the space lists plans of one pipeline shape together) and the chunks take about the same time.
std::vector<size_t> chunk_plans(size_t n, size_t c, size_t chunks)
{
  std::vector<size_t> out;
  for (size_t i = c; i < n; i += chunks)
    out.push_back(i);
  return out;
}

struct ChunkBounds {
  std::vector<double> bound;
  std::vector<std::string> error;  // "" where the bound was computed
};

ChunkBounds bound_chunk(const SearchPlans& plans, const std::vector<size_t>& which)
{
  ChunkBounds c;
  if (which.empty())
    return c;
  scenario::ScenarioSpec s = plans.at(which.front());
  for (size_t i : which) {
    plans.become(i, s);
    try {
      c.bound.push_back(systems::system_kind(s).lower_bound_step_s(s, parallel::derive_plan(s)));
      c.error.emplace_back();
    } catch (const InternalError& e) {
      c.bound.push_back(0.0);
      c.error.emplace_back(e.what());
    }
  }
  return c;
}

// CBOR keeps every double exactly (as a float only where that is the same number).
Bytes to_bytes(const ChunkBounds& c)
{
  return nlohmann::json::to_cbor(nlohmann::json{{"bound", c.bound}, {"error", c.error}});
}

ChunkBounds from_bytes(const Bytes& b)
{
  const nlohmann::json j = nlohmann::json::from_cbor(b);
  return {j.at("bound").get<std::vector<double>>(), j.at("error").get<std::vector<std::string>>()};
}

}  // namespace

PlanBounds plan_bounds(const SearchPlans& plans, const ReplayKeys& keys, int workers)
{
  const size_t n = plans.size();
  // The plans whose bound is computed (the first of each bound class), and for every plan the one whose bound it
  // takes.
  std::vector<size_t> computed, same_as(n);
  {
    std::vector<size_t> first(keys.bound_classes(), n);
    for (size_t i = 0; i < n; ++i) {
      size_t& f = first[keys.bound_class(i)];
      if (f == n) {
        f = i;
        computed.push_back(i);
      }
      same_as[i] = f;
    }
  }
  const MpiWorld world = mpi_world();
  const size_t chunks =
      std::min(computed.size(), size_t(std::max(1, workers)) * size_t(world.size) * kChunksPerWorker);
  std::vector<std::vector<size_t>> members(chunks);
  std::vector<std::function<Bytes()>> jobs;
  for (size_t c = 0; c < chunks; ++c) {
    for (size_t k : chunk_plans(computed.size(), c, chunks))
      members[c].push_back(computed[k]);
    jobs.push_back([&plans, which = &members[c]]() { return to_bytes(bound_chunk(plans, *which)); });
  }
  auto got = run_across_ranks(jobs, workers);
  PlanBounds r;
  r.bound.assign(n, 0.0);
  r.failed.assign(n, 0);
  std::optional<std::vector<uint64_t>> shared;  // every bound's bits, then every failed flag (MPI)
  if (world.root()) {
    try {
      std::vector<std::string> errors(n);
      for (size_t c = 0; c < chunks; ++c) {
        const ChunkBounds chunk = got[c] ? from_bytes(*got[c]) : bound_chunk(plans, members[c]);
        for (size_t k = 0; k < members[c].size(); ++k) {
          r.bound[members[c][k]] = chunk.bound[k];
          errors[members[c][k]] = chunk.error[k];
        }
      }
      for (size_t i = 0; i < n; ++i) {  // in the order of the list, whichever chunk computed them
        r.bound[i] = r.bound[same_as[i]];
        const std::string& error = errors[same_as[i]];
        if (error.empty())
          continue;
        r.failed[i] = 1;
        ++r.failures[error];
        if (r.first_failed_plan.empty())
          r.first_failed_plan = parallel::describe_plan(plans.plan_only(i));
      }
    } catch (...) {
      if (world.size > 1)
        broadcast_from_root(std::nullopt);  // the other ranks stop too
      throw;
    }
    if (world.size == 1)
      return r;
    shared.emplace(2 * n);
    for (size_t i = 0; i < n; ++i) {
      std::memcpy(&(*shared)[i], &r.bound[i], sizeof(double));
      (*shared)[n + i] = uint64_t(r.failed[i]);
    }
  }
  shared = broadcast_from_root(shared);
  if (!shared)
    throw std::runtime_error("search: rank 0 could not compute the plans' lower bounds");
  if (!world.root())
    for (size_t i = 0; i < n; ++i) {
      std::memcpy(&r.bound[i], &(*shared)[i], sizeof(double));
      r.failed[i] = char((*shared)[n + i]);
    }
  return r;
}

}  // namespace dtsim::app
