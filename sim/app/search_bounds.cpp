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

using json = nlohmann::json;

// Plans per child: a fork copies the parent's page tables (about 3 % of a full-space search's CPU when it was one
// fork per simulated plan), so each child bounds many; small enough that two workers finish together.
constexpr size_t kPlansPerChild = 64;

struct ChunkBounds {
  std::vector<double> bound;
  std::vector<std::string> error;  // "" where the bound was computed
};

ChunkBounds bound_chunk(const std::vector<scenario::ScenarioSpec>& plans, size_t first, size_t last)
{
  ChunkBounds c;
  for (size_t i = first; i < last; ++i) {
    const scenario::ScenarioSpec& s = plans[i];
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
Bytes to_bytes(const ChunkBounds& c) { return json::to_cbor(json{{"bound", c.bound}, {"error", c.error}}); }

ChunkBounds from_bytes(const Bytes& b)
{
  const json j = json::from_cbor(b);
  return {j.at("bound").get<std::vector<double>>(), j.at("error").get<std::vector<std::string>>()};
}

}  // namespace

PlanBounds plan_bounds(const std::vector<scenario::ScenarioSpec>& plans, int workers)
{
  const size_t n = plans.size();
  std::vector<std::function<Bytes()>> jobs;
  for (size_t first = 0; first < n; first += kPlansPerChild) {
    const size_t last = std::min(n, first + kPlansPerChild);
    jobs.push_back([&plans, first, last]() { return to_bytes(bound_chunk(plans, first, last)); });
  }
  auto got = run_across_ranks(jobs, workers);
  const MpiWorld world = mpi_world();
  PlanBounds r;
  r.bound.assign(n, 0.0);
  r.failed.assign(n, 0);
  std::optional<std::vector<uint64_t>> shared;  // every bound's bits, then every failed flag (MPI)
  if (world.root()) {
    try {
      for (size_t c = 0; c < jobs.size(); ++c) {
        const size_t first = c * kPlansPerChild;
        const size_t last = std::min(n, first + kPlansPerChild);
        const ChunkBounds chunk = got[c] ? from_bytes(*got[c]) : bound_chunk(plans, first, last);
        for (size_t i = first; i < last; ++i) {
          r.bound[i] = chunk.bound[i - first];
          const std::string& error = chunk.error[i - first];
          if (error.empty())
            continue;
          r.failed[i] = 1;
          ++r.failures[error];
          if (r.first_failed_plan.empty())
            r.first_failed_plan = parallel::describe_plan(plans[i]);
        }
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
