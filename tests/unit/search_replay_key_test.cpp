// Plans a search prices from one replay (app::ReplayKeys): every plan of a replay class has the step time that
// `dtsim run` of that plan gives (app::simulate, each in its own process), and the search lists each with that step
// and its own memory. The classes merge plans that differ in the schedule's name only (zb-h1 and zb-h2 where their
// orders coincide), never plans whose step programs differ (`selective` and `none` recomputation).
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/load.hpp"
#include "app/search.hpp"
#include "app/search_replay_key.hpp"
#include "app/simulate.hpp"
#include "core/child_process.hpp"
#include "parallel/plan_space.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::scenario::ScenarioSpec;

// The search as `dtsim search SCENARIO --top 20` runs it (pruned by bound).
nlohmann::json search(const std::string& scenario)
{
  dtsim::app::SearchOptions o;
  o.scenario = dtsim::test::source_path(scenario);
  o.top = 20;
  o.format = "json";
  o.quiet = true;
  std::ostringstream out, log;
  dtsim::app::search(out, log, o);
  return nlohmann::json::parse(out.str());
}

void expect_shared_steps_as_run(const std::string& scenario, size_t& merged_schedules)
{
  const auto base = dtsim::app::load_for_simulation(dtsim::test::source_path(scenario), {});
  const auto every = dtsim::parallel::enumerate_plans(base, dtsim::parallel::PlanDimensions::wide(base)).fitting;
  dtsim::app::SearchPlans plans(base);
  for (const ScenarioSpec& p : every)
    plans.add(p);
  const dtsim::app::ReplayKeys keys(plans);
  std::map<size_t, std::vector<size_t>> members;
  for (size_t i = 0; i < plans.size(); ++i)
    members[keys.replay_class(i)].push_back(i);
  // The plans of the first classes with more than one, simulated each on its own as `dtsim run` does.
  std::vector<size_t> checked;
  size_t classes = 0;
  for (const auto& [c, plans_of] : members) {
    if (plans_of.size() < 2 || ++classes > 12)
      continue;
    for (size_t i : plans_of) {
      const ScenarioSpec& a = every[i];
      const ScenarioSpec& b = every[plans_of.front()];
      SCOPED_TRACE(dtsim::parallel::describe_plan(a) + " and " + dtsim::parallel::describe_plan(b));
      EXPECT_EQ(a.training.recompute, b.training.recompute);
      if (a.schedule != b.schedule)
        ++merged_schedules;
      checked.push_back(i);
    }
  }
  ASSERT_FALSE(checked.empty()) << scenario << ": no two plans share a replay";
  std::vector<std::function<std::vector<double>()>> jobs;
  for (size_t i : checked)
    jobs.push_back([&every, i]() {
      const auto r = dtsim::app::simulate(every[i], false);
      return std::vector<double>{r.simulated ? r.replay.step_time_s : 0.0, r.memory.peak_bytes()};
    });
  const auto run = dtsim::run_in_children(jobs, 2);
  // The search: each plan it lists with the step of `dtsim run` and its own memory; those of the same replay as
  // another listed plan among them.
  const nlohmann::json searched = search(scenario);
  std::map<std::string, std::pair<double, double>> listed;
  for (const auto& row : searched["ranking"])
    listed[row["plan"].get<std::string>()] = {row["step_time_s"].get<double>(),
                                             row["memory_peak_bytes_per_device"].get<double>()};
  std::map<size_t, double> class_step;
  for (size_t k = 0; k < checked.size(); ++k) {
    const size_t i = checked[k];
    const std::string name = dtsim::parallel::describe_plan(every[i]);
    SCOPED_TRACE(name);
    ASSERT_TRUE(run[k].has_value());
    const double step = (*run[k])[0], memory = (*run[k])[1];
    ASSERT_GT(step, 0.0);
    auto [it, first] = class_step.try_emplace(keys.replay_class(i), step);
    EXPECT_EQ(step, it->second);  // bit for bit: one replay
    if (listed.count(name)) {
      EXPECT_EQ(listed[name].first, step);
      EXPECT_EQ(listed[name].second, memory);
    }
  }
  // Every plan the search gave another's step: as `dtsim run` of it gives.
  std::vector<ScenarioSpec> shared;
  std::map<size_t, size_t> listed_in_class;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < every.size(); ++i)
    index[dtsim::parallel::describe_plan(every[i])] = i;
  for (const auto& [name, row] : listed)
    if (++listed_in_class[keys.replay_class(index.at(name))] > 1)
      shared.push_back(every[index.at(name)]);
  ASSERT_EQ(int64_t(shared.size()), searched["plans"]["same_replay_as_a_simulated_plan"].get<int64_t>());
  std::vector<std::function<std::vector<double>()>> runs;
  for (const auto& p : shared)
    runs.push_back([&p]() {
      const auto r = dtsim::app::simulate(p, false);
      return std::vector<double>{r.simulated ? r.replay.step_time_s : 0.0, r.memory.peak_bytes()};
    });
  const auto got = dtsim::run_in_children(runs, 2);
  for (size_t k = 0; k < shared.size(); ++k) {
    const std::string name = dtsim::parallel::describe_plan(shared[k]);
    SCOPED_TRACE("listed with another's step: " + name);
    ASSERT_TRUE(got[k].has_value());
    EXPECT_EQ(listed[name].first, (*got[k])[0]);
    EXPECT_EQ(listed[name].second, (*got[k])[1]);
  }
}

}  // namespace

TEST(SearchReplayKey, PlansOfOneReplayClassStepAsDtsimRunOfEach)
{
  size_t merged_schedules = 0;
  expect_shared_steps_as_run("scenarios/tiny.yaml", merged_schedules);
  expect_shared_steps_as_run("scenarios/tiny-moe.yaml", merged_schedules);
  EXPECT_GT(merged_schedules, 0u);  // zb-h1 and zb-h2 where their orders coincide
}
