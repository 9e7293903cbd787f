// A step program built without labels (replay::StepLabels::Skipped, as a search's lower bounds build it) is the
// labelled program less its labels, step for step, and the bound computed on it is the same double.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/compute_model.hpp"
#include "model/transformer.hpp"
#include "parallel/plan.hpp"
#include "parallel/plan_space.hpp"
#include "replay/step_program.hpp"
#include "scenario/scenario_spec.hpp"
#include "systems/gpu_cluster/gpu_step.hpp"
#include "systems/gpu_cluster/step_bound.hpp"
#include "tiny_scenario.hpp"

namespace {

using dtsim::replay::Step;
using dtsim::replay::StepLabels;
using Table = std::vector<std::vector<std::vector<Step>>>;

dtsim::replay::StepProgram labels_test_program(const dtsim::scenario::ScenarioSpec& s, StepLabels labels)
{
  dtsim::model::Transformer t(s.model);
  const auto plan = dtsim::parallel::derive_plan(s);
  dtsim::kernels::ComputeModel cm(s.hardware.device, plan.precision.name, s.stack);
  return dtsim::replay::build_step_program(s, plan, t, cm, labels);
}

// Every field of every step the same but the label, which the unlabelled table leaves empty; returns the steps
// compared and how many of the labelled ones carry a label.
void labels_test_compare(const Table& made, const Table& skipped, const std::string& what, int64_t& steps,
                         int64_t& labelled)
{
  ASSERT_EQ(made.size(), skipped.size()) << what;
  for (size_t st = 0; st < made.size(); ++st) {
    ASSERT_EQ(made[st].size(), skipped[st].size()) << what;
    for (size_t c = 0; c < made[st].size(); ++c) {
      ASSERT_EQ(made[st][c].size(), skipped[st][c].size()) << what << " stage " << st << " chunk " << c;
      for (size_t i = 0; i < made[st][c].size(); ++i) {
        const Step& a = made[st][c][i];
        const Step& b = skipped[st][c][i];
        const std::string where = what + " stage " + std::to_string(st) + " chunk " + std::to_string(c) + " step " +
                                  std::to_string(i) + " (" + a.label + ")";
        EXPECT_EQ(a.kind, b.kind) << where;
        EXPECT_EQ(a.seconds, b.seconds) << where;
        EXPECT_EQ(a.flops, b.flops) << where;
        EXPECT_EQ(a.jitter_weight, b.jitter_weight) << where;
        EXPECT_EQ(a.recompute, b.recompute) << where;
        EXPECT_EQ(a.accumulation, b.accumulation) << where;
        EXPECT_EQ(a.collective, b.collective) << where;
        EXPECT_EQ(a.bytes, b.bytes) << where;
        EXPECT_EQ(a.grad_index, b.grad_index) << where;
        EXPECT_EQ(a.expert, b.expert) << where;
        EXPECT_EQ(a.beside_next, b.beside_next) << where;
        EXPECT_EQ(a.blocking, b.blocking) << where;
        EXPECT_EQ(a.copy_engine, b.copy_engine) << where;
        EXPECT_TRUE(b.label.empty()) << where << ": '" << b.label << "'";
        ++steps;
        labelled += a.label.empty() ? 0 : 1;
      }
    }
  }
}

std::vector<dtsim::scenario::ScenarioSpec> labels_test_plans()
{
  using dtsim::test::tiny_moe;
  using dtsim::test::tiny_scenario;
  return {
      tiny_scenario({}),
      tiny_scenario({"schedule=zb-h1", "parallel.pp_overlap=true"}),
      tiny_scenario({"parallel.pp=1", "parallel.zero=3", "training.recompute=full"}),
      tiny_scenario({"parallel.param_gather_overlap=true", "parallel.zero=1", "training.recompute=selective"}),
      tiny_moe({}),
      tiny_moe({"parallel.zero=3", "training.recompute=full"}),
      tiny_moe({"parallel.moe_preprocess_graphed=true", "training.recompute=full"}),
  };
}

}  // namespace

TEST(StepLabels, AProgramWithoutLabelsIsTheLabelledOneLessItsLabels)
{
  for (const auto& s : labels_test_plans()) {
    const std::string what = dtsim::parallel::describe_plan(s);
    const auto made = labels_test_program(s, StepLabels::Made);
    const auto skipped = labels_test_program(s, StepLabels::Skipped);
    int64_t steps = 0, labelled = 0;
    labels_test_compare(made.forward, skipped.forward, what + " forward", steps, labelled);
    labels_test_compare(made.forward_first, skipped.forward_first, what + " forward_first", steps, labelled);
    labels_test_compare(made.backward, skipped.backward, what + " backward", steps, labelled);
    labels_test_compare(made.backward_first, skipped.backward_first, what + " backward_first", steps, labelled);
    labels_test_compare(made.backward_input, skipped.backward_input, what + " backward_input", steps, labelled);
    labels_test_compare(made.backward_weight, skipped.backward_weight, what + " backward_weight", steps, labelled);
    labels_test_compare(made.backward_weight_first, skipped.backward_weight_first, what + " backward_weight_first",
                        steps, labelled);
    EXPECT_GT(steps, 0) << what;
    EXPECT_GT(labelled, 0) << what;  // the labelled program does carry labels
    EXPECT_EQ(made.optimizer_seconds, skipped.optimizer_seconds) << what;
    EXPECT_EQ(made.model_flops, skipped.model_flops) << what;
    EXPECT_EQ(made.hardware_flops, skipped.hardware_flops) << what;
    // The bound a search computes (on the unlabelled program) is the one the labelled program gives, bit for bit.
    const auto plan = dtsim::parallel::derive_plan(s);
    EXPECT_EQ(dtsim::systems::step_time_lower_bound(s, plan, dtsim::systems::prepare_gpu_step(s, plan)),
              dtsim::systems::step_time_lower_bound(
                  s, plan, dtsim::systems::prepare_gpu_step(s, plan, StepLabels::Skipped)))
        << what;
  }
}
