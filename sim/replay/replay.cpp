#include "replay/replay.hpp"

#include <functional>
#include <memory>

#include "replay/driver.hpp"

namespace dtsim::replay {

Breakdown& Breakdown::operator+=(const Breakdown& o)
{
  for (double Breakdown::*term : kBreakdownTerms)
    this->*term += o.*term;
  return *this;
}

Breakdown& Breakdown::operator/=(double n)
{
  for (double Breakdown::*term : kBreakdownTerms)
    this->*term /= n;
  return *this;
}

namespace {

// A time every device spends after the replayed step (every sampled step too), booked under `term`.
void add_after_step(ReplayResult& r, double seconds, double Breakdown::*term)
{
  if (seconds <= 0)
    return;
  r.step_time_s += seconds;
  for (double& x : r.sample_steps)
    x += seconds;
  r.average.*term += seconds;
  for (auto& b : r.per_stage)
    b.*term += seconds;
}

}  // namespace

void add_step_overhead(ReplayResult& r, double seconds)
{
  add_after_step(r, seconds, &Breakdown::stack_overhead_s);
}

void add_step_collectives(ReplayResult& r, double seconds)
{
  add_after_step(r, seconds, &Breakdown::step_collectives_s);
}

namespace {

// The mean of the samples' results (each one's parts add up to its step, so the means add up to the mean step); the
// rest (devices, links, folding, trace) is the first sample's, and the activities are all of the simulation's (the
// last sample's count: one Activities counts them all).
ReplayResult mean_of(std::vector<ReplayResult>& samples)
{
  ReplayResult r = std::move(samples.front());
  r.step_time_s = 0;
  r.average = Breakdown{};
  for (auto& b : r.per_stage)
    b = Breakdown{};
  r.activities = samples.back().activities;
  for (const auto& x : samples) {
    r.sample_steps.push_back(x.step_time_s);
    r.step_time_s += x.step_time_s;
    r.average += x.average;
    for (size_t i = 0; i < r.per_stage.size() && i < x.per_stage.size(); ++i)
      r.per_stage[i] += x.per_stage[i];
  }
  const double n = double(samples.size());
  r.step_time_s /= n;
  r.average /= n;
  for (auto& b : r.per_stage)
    b /= n;
  return r;
}

// Variability with several samples: each sample's step is a driver of its own, started when the one before it
// ends, on one platform (as jobs' steps follow one another on a shared fabric, shared_fabric.cpp).
ReplayResult run_samples(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan,
                         const StepProgram& program, const parallel::PipelineSchedule& schedule, bool record_trace)
{
  Activities acts;
  const int64_t samples = s.variability.samples;
  std::vector<std::unique_ptr<Driver>> drivers;  // kept until the engine is done: callbacks return into them
  std::vector<ReplayResult> results;
  auto new_sample = [&](int64_t k, double t) -> Driver& {
    const ClusterSlot slot{plan.placement, t};
    drivers.push_back(
        std::make_unique<Driver>(acts, s, plan, program, schedule, record_trace && k == 0, &slot, k));
    return *drivers.back();
  };
  Driver& first = new_sample(0, 0.0);
  const platform::ClusterPlatform platform(s.hardware, plan.placement, first.needed_devices());
  std::function<void(Driver&, int64_t)> launch = [&](Driver& step, int64_t k) {
    step.attach(platform);
    Driver* const finished = &step;
    step.on_done([&, finished, k]() {
      results.push_back(finished->finish());
      if (k + 1 < samples)
        launch(new_sample(k + 1, Activities::now()), k + 1);
    });
    step.start();
  };
  acts.run([&]() { launch(first, 0); });
  if (int64_t(results.size()) != samples)
    throw InternalError("the sampled steps did not complete: the schedule deadlocked");
  return mean_of(results);
}

}  // namespace

ReplayResult run_replay(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan, const StepProgram& program,
                        const parallel::PipelineSchedule& schedule, bool record_trace)
{
  if (s.variability.on() && s.variability.samples > 1)
    return run_samples(s, plan, program, schedule, record_trace);
  Activities acts;
  Driver driver(acts, s, plan, program, schedule, record_trace);
  acts.run([&]() { driver.start(); });
  if (!driver.all_done())
    throw InternalError("the step did not complete: the schedule deadlocked");
  ReplayResult r = driver.finish();
  if (s.variability.samples > 1)  // nothing varies: every sample is this step
    r.sample_steps.assign(size_t(s.variability.samples), r.step_time_s);
  return r;
}

}  // namespace dtsim::replay
