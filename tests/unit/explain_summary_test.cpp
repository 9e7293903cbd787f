// `dtsim explain`'s summary of one layer (sim/report/explain.cpp): each kind of collective under its own name (the
// expert all-to-alls and context-parallel rings are not tensor-parallel collectives), under partial recomputation
// how many layers are recomputed, and each GEMM's share of the peak it runs at.
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <string>

#include "app/load.hpp"
#include "kernels/compute_model.hpp"
#include "model/transformer.hpp"
#include "parallel/plan.hpp"
#include "report/explain.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::test::source_path;

std::string explain_text(const std::string& scenario, const std::vector<std::string>& overrides)
{
  const auto s = dtsim::app::load_for_simulation(source_path(scenario), overrides);
  std::ostringstream out;
  dtsim::report::print_explain(out, s, dtsim::parallel::derive_plan(s));
  return out.str();
}

// The summary line that starts with `name` ("  forward", "  recompute", ...).
std::string summary_line(const std::string& text, const std::string& name)
{
  const auto summary = text.find("one layer, one microbatch");
  EXPECT_NE(summary, std::string::npos) << text;
  std::istringstream in(text.substr(summary));
  for (std::string line; std::getline(in, line);)
    if (line.rfind(name, 0) == 0)
      return line;
  ADD_FAILURE() << "no line '" << name << "' in:\n" << text;
  return "";
}

// The number printed after `term` in `line`.
double term(const std::string& line, const std::string& name)
{
  const auto at = line.find(name);
  EXPECT_NE(at, std::string::npos) << "no '" << name << "' in: " << line;
  return at == std::string::npos ? 0.0 : std::stod(line.substr(at + name.size()));
}

}  // namespace

// DeepSeek-V3 on 2,048 H800 (ep 64, tp 1): the layer's expert all-to-alls are named as such, no tensor-parallel
// term is printed for a plan without tensor parallelism, and the terms add up to the pass's time.
TEST(ExplainSummary, NamesTheExpertAllToAlls)
{
  const std::string text = explain_text("scenarios/examples/deepseek-v3-h800x2048.yaml", {});
  for (const char* pass : {"  forward", "  backward"}) {
    const std::string line = summary_line(text, pass);
    SCOPED_TRACE(line);
    EXPECT_EQ(line.find("context-parallel"), std::string::npos);
    EXPECT_EQ(line.find("tensor-parallel"), std::string::npos);
    const double a2a = term(line, "+ expert all-to-alls ");
    EXPECT_GT(a2a, 0.0);
    const double sum = term(line, "= kernels ") + a2a;
    EXPECT_NEAR(sum, term(line, pass), 2e-3);  // each printed to the microsecond
  }
}

// Context parallelism (tiny GPT, cp 2): the ring's collectives are named as a context-parallel ring, not as
// tensor-parallel ones; a dense model without cp prints neither term.
TEST(ExplainSummary, NamesTheContextParallelRings)
{
  const std::string line =
      summary_line(explain_text("scenarios/tiny.yaml", {"parallel.cp=2", "parallel.dp=1"}), "  forward");
  EXPECT_NE(line.find("+ context-parallel rings "), std::string::npos) << line;
  EXPECT_EQ(line.find("expert"), std::string::npos) << line;
  const std::string dense = summary_line(explain_text("scenarios/tiny.yaml", {}), "  forward");
  EXPECT_EQ(dense.find("context-parallel"), std::string::npos) << dense;
  EXPECT_EQ(dense.find("expert"), std::string::npos) << dense;
}

// Recomputation says which layers it re-runs: all of stage 0's under full recomputation, the first
// training.recompute_layers of each chunk otherwise (GPT-3 175B on 1,024 A100: pp 16 holds 6 layers a stage, one
// chunk; recompute_layers 2 re-runs 2 of them), and the total of a layer that is not recomputed.
TEST(ExplainSummary, SaysHowManyLayersAreRecomputed)
{
  const std::string all =
      summary_line(explain_text("scenarios/default.yaml", {"training.recompute=full"}), "  recompute");
  EXPECT_NE(all.find("(full: all 6 layers of stage 0)"), std::string::npos) << all;

  const std::string text =
      explain_text("scenarios/default.yaml", {"training.recompute=full", "training.recompute_layers=2"});
  const std::string some = summary_line(text, "  recompute");
  EXPECT_NE(some.find("full: the first 2 of the 6 layers of stage 0 by training.recompute_layers"), std::string::npos)
      << some;
  const std::string total = summary_line(text, "  total");
  EXPECT_NE(total.find("for a recomputed layer"), std::string::npos) << total;

  // DeepSeek-V3's report run under DualPipe: two chunks of stage 0 (its own layers and a copy of the last stage's),
  // each recomputing its first 2 (scenarios/validation/deepseek-v3-2048-h800.yaml: recompute_layers 2).
  const std::string dualpipe =
      summary_line(explain_text("scenarios/validation/deepseek-v3-2048-h800.yaml", {}), "  recompute");
  EXPECT_NE(dualpipe.find("full: 4 of the "), std::string::npos) << dualpipe;
  EXPECT_NE(dualpipe.find("the first 2 of each of its 2 chunks by training.recompute_layers"), std::string::npos)
      << dualpipe;

  const std::string selective =
      summary_line(explain_text("scenarios/default.yaml", {"training.recompute=selective"}), "  recompute");
  EXPECT_NE(selective.find("selective"), std::string::npos) << selective;
  EXPECT_NE(selective.find("6 layers of stage 0"), std::string::npos) << selective;

  // Under fused attention selective recomputation re-runs nothing (its backward recomputes the scores itself, a row
  // of the backward): the line says so rather than naming an attention core it does not re-run.
  const std::string fused = summary_line(
      explain_text("scenarios/default.yaml", {"training.recompute=selective", "training.flash_attention=true"}),
      "  recompute");
  EXPECT_NE(fused.find("0.000 ms (selective: nothing to re-run under fused attention"), std::string::npos) << fused;
}

// A plan without tensor parallelism (BERT-large on 8 A100, tp 1, cp 1) runs no collectives in a layer: the summary
// says so and names no tensor-parallel term; tiny (tp 2) keeps it.
TEST(ExplainSummary, SaysNothingOfCollectivesThePlanDoesNotHave)
{
  const std::string text = explain_text("scenarios/examples/bert-large-a100x8.yaml", {});
  EXPECT_NE(text.find("one layer, one microbatch (kernels only: at tp 1 and cp 1 a layer runs no collectives)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("on one device ("), std::string::npos) << text;
  for (const char* pass : {"  forward", "  backward"}) {
    const std::string line = summary_line(text, pass);
    EXPECT_EQ(line.find("collectives"), std::string::npos) << line;
    EXPECT_NEAR(term(line, "= kernels "), term(line, pass), 1e-12) << line;
  }
  const std::string tiny = explain_text("scenarios/tiny.yaml", {});
  EXPECT_NE(summary_line(tiny, "  forward").find("+ tensor-parallel collectives "), std::string::npos);
  EXPECT_NE(tiny.find("on one tensor-parallel rank ("), std::string::npos) << tiny;
}

// Under fp8 attention's GEMMs run at the bf16 peak (kernels::ComputeModel): DeepSeek-V3's attention score GEMM prints
// its share of that peak, not half of it against the fp8 peak; memory-bound kernels print no share; the summary names
// the peak it divides by.
TEST(ExplainSummary, EachGemmAgainstThePeakItRunsAt)
{
  const auto s = dtsim::app::load_for_simulation(source_path("scenarios/examples/deepseek-v3-h800x2048.yaml"), {});
  const auto plan = dtsim::parallel::derive_plan(s);
  std::ostringstream out;
  dtsim::report::print_explain(out, s, plan);
  const std::string text = out.str();
  const dtsim::kernels::ComputeModel cm(s.hardware.device, "fp8", s.stack);
  const dtsim::model::Transformer t(s.model);
  double expected = 0;
  for (const auto& seg : t.layer(plan.shape).forward)
    for (const auto& op : seg.ops)
      if (op.name == "attn_scores")
        expected = 100 * op.flops() / cm.seconds(op) / s.hardware.device.peak_flops.at("bf16");
  ASSERT_GT(expected, 60.0);
  char row_end[32];
  std::snprintf(row_end, sizeof row_end, " %.1f%%", expected);
  std::istringstream in(text);
  std::string scores, layernorm;
  for (std::string line; std::getline(in, line);) {
    if (scores.empty() && line.rfind("  attn_scores ", 0) == 0)
      scores = line;
    if (layernorm.empty() && line.rfind("  layernorm1 ", 0) == 0)
      layernorm = line;
  }
  EXPECT_EQ(scores.substr(scores.size() - std::string(row_end).size()), row_end) << scores;
  EXPECT_EQ(layernorm.back(), '-') << layernorm;
  EXPECT_NE(summary_line(text, "  forward").find("of the fp8 peak)"), std::string::npos);
}
