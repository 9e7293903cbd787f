#include "replay/shared_fabric.hpp"

#include <algorithm>
#include <memory>
#include <numeric>

#include "core/diagnostics.hpp"
#include "parallel/step_collectives.hpp"
#include "replay/driver.hpp"

namespace dtsim::replay {

double SharedJobResult::mean_step_s() const
{
  return contended_s.empty() ? 0.0
                             : std::accumulate(contended_s.begin(), contended_s.end(), 0.0) /
                                   double(contended_s.size());
}

namespace {

// One job's steps as they run: a driver per step (kept until the engine is done: their last activities' callbacks
// return into them), and what each finished step measured.
struct JobRun {
  std::vector<std::unique_ptr<Driver>> steps;
  std::vector<ReplayResult> results;
  std::vector<double> starts, ends;  ///< when each step started, and when it and its fixed time ended
  int64_t contended_started = 0;     ///< finished steps that started once every job had started
};

}  // namespace

std::vector<SharedJobResult> run_shared_fabric(const std::vector<SharedJob>& jobs, int64_t min_steps)
{
  if (jobs.empty() || min_steps < 1)
    throw InternalError("run_shared_fabric: no job, or fewer than one step");
  Activities acts;
  const auto& hw = jobs.front().spec->hardware;
  const int64_t per_node = hw.domain_devices();
  const int64_t cluster_nodes = jobs.front().placement.cluster_size();
  std::vector<JobRun> runs(jobs.size());
  double all_started = 0;  // when the last job starts
  for (const auto& job : jobs)
    all_started = std::max(all_started, job.start_s);
  const double eps = 1e-12 * (1 + all_started);
  auto new_step = [&](size_t j, double t) -> Driver& {
    const ClusterSlot slot{jobs[j].placement, t};
    runs[j].starts.push_back(t);
    runs[j].steps.push_back(std::make_unique<Driver>(acts, *jobs[j].spec, *jobs[j].plan, *jobs[j].program,
                                                     *jobs[j].schedule, false, &slot));
    return *runs[j].steps.back();
  };
  // The platform holds every device a job's replay touches, numbered as the cluster numbers them.
  std::vector<int64_t> needed;
  for (size_t j = 0; j < jobs.size(); ++j)
    for (int64_t d : new_step(j, jobs[j].start_s).needed_cluster_devices())
      needed.push_back(d);
  std::sort(needed.begin(), needed.end());
  needed.erase(std::unique(needed.begin(), needed.end()), needed.end());
  const platform::ClusterPlatform platform(hw, parallel::Placement(cluster_nodes * per_node, 1, 1, per_node), needed);

  auto every_job_ran = [&]() {
    return std::all_of(runs.begin(), runs.end(), [&](const JobRun& r) { return r.contended_started >= min_steps; });
  };
  std::vector<double> step_collectives_s;
  for (const auto& job : jobs)
    step_collectives_s.push_back(parallel::step_collectives(*job.spec, *job.plan).total_s());
  std::function<void(size_t, Driver&)> launch;
  launch = [&](size_t j, Driver& step) {
    step.attach(platform);
    Driver* const finished = &step;  // by value: the lambda outlives this call
    step.on_done([&, j, finished]() {
      ReplayResult r = finished->finish();
      // As `dtsim run` prices them: the step's small all-reduces, then the stack's fixed overhead.
      add_step_collectives(r, step_collectives_s[j]);
      add_step_overhead(r, jobs[j].spec->stack.factors.step_overhead_s);
      const double after_s = step_collectives_s[j] + std::max(0.0, jobs[j].spec->stack.factors.step_overhead_s);
      const double end = Activities::now() + after_s;
      runs[j].results.push_back(std::move(r));
      runs[j].ends.push_back(end);
      if (runs[j].starts[runs[j].results.size() - 1] >= all_started - eps)
        ++runs[j].contended_started;
      if (every_job_ran())
        return;
      auto next = [&, j, end]() { launch(j, new_step(j, end)); };
      if (after_s > 0)
        acts.delay(after_s, next);
      else
        next();
    });
    step.start();
  };
  acts.run([&]() {
    for (size_t j = 0; j < jobs.size(); ++j) {
      Driver& first = *runs[j].steps.front();
      if (jobs[j].start_s > 0)
        acts.delay(jobs[j].start_s, [&, j]() { launch(j, *runs[j].steps.front()); });
      else
        launch(j, first);
    }
  });

  std::vector<SharedJobResult> out(jobs.size());
  double contended_until = runs.front().ends.empty() ? 0.0 : runs.front().ends.back();
  for (const auto& r : runs) {
    if (r.results.size() < size_t(min_steps) || r.steps.size() != r.results.size())
      throw InternalError("the jobs on the shared fabric did not complete their steps: a schedule deadlocked");
    contended_until = std::min(contended_until, r.ends.back());
  }
  for (size_t j = 0; j < jobs.size(); ++j) {
    auto& res = out[j];
    res.steps_run = int64_t(runs[j].results.size());
    for (size_t k = 0; k < runs[j].results.size(); ++k)
      if (runs[j].starts[k] >= all_started - eps && runs[j].ends[k] <= contended_until * (1 + 1e-12)) {
        res.contended_s.push_back(runs[j].results[k].step_time_s);
        res.average += runs[j].results[k].average;
      }
    res.average /= double(res.contended_s.size());
  }
  return out;
}

}  // namespace dtsim::replay
