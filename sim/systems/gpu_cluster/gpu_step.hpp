#pragma once
/// What a GPU cluster replays for one step of a scenario: the step program (every kernel and collective, timed) and
/// the pipeline schedule that orders it. Built the same way for a run alone and for jobs on a shared fabric.
#include <memory>

#include "parallel/plan.hpp"
#include "parallel/schedule.hpp"
#include "replay/step_program.hpp"
#include "scenario/scenario_spec.hpp"

namespace dtsim::systems {

struct GpuStep {
  std::shared_ptr<const replay::StepProgram> program;
  parallel::PipelineSchedule schedule;
};

/// `labels`: whether the program's steps are labelled (replay::StepLabels; a lower bound reads none).
GpuStep prepare_gpu_step(const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan,
                         replay::StepLabels labels = replay::StepLabels::Made);

}  // namespace dtsim::systems
