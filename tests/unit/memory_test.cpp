// Memory per device against Korthikanti et al. 2022 (Table 2 and Eq. 5: activations per layer and per first
// pipeline stage) and Rajbhandari et al. 2019 (16 bytes per parameter for mixed-precision Adam). Expected values
// are computed here from those formulas.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "model/transformer.hpp"
#include "parallel/memory.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"

using dtsim::parallel::derive_plan;

namespace {

using dtsim::parallel::estimate_memory;
using dtsim::parallel::layer_activation_bytes;
using dtsim::scenario::Recompute;
using dtsim::scenario::ScenarioSpec;
using dtsim::test::load_model_or_throw;
using dtsim::test::rel_diff;
using dtsim::test::source_path;

// GPT-3 175B (f = 4h, a = 96, h = 12288), s = 2048, b = 1, bf16, on 80 GiB devices.
ScenarioSpec gpt3_spec(int64_t tp, bool sp, int64_t pp = 1, int64_t microbatches = 1,
                       const std::string& schedule = "1f1b", int64_t vpp = 1)
{
  ScenarioSpec s;
  s.model = load_model_or_throw("models/gpt3-175b.yaml");
  s.parallel.tp = tp;
  s.parallel.sp = sp;
  s.parallel.pp = pp;
  s.parallel.vpp = vpp;
  s.parallel.dp = 1;
  s.devices = tp * pp;
  s.schedule = schedule;
  s.training.seq_len = 2048;
  s.training.micro_batch = 1;
  s.training.global_batch = microbatches;
  s.training.precision = "bf16";
  s.microbatches = microbatches;
  s.hardware.kind = "gpu-cluster";  // its rules: Megatron-LM pads the vocabulary
  s.hardware.device.memory_bytes = 80.0 * 1073741824.0;
  return s;
}

constexpr double s_ = 2048, b_ = 1, h_ = 12288, a_ = 96;
const double sbh = s_ * b_ * h_;

// Korthikanti 2022 Table 2, bytes per layer with 16-bit activations.
double table2_no_parallelism() { return sbh * (34 + 5 * a_ * s_ / h_); }
double table2_tp(double t) { return sbh * (10 + 24 / t + 5 * a_ * s_ / (h_ * t)); }
double table2_tp_sp(double t) { return sbh * (34 / t + 5 * a_ * s_ / (h_ * t)); }
double table2_tp_selective(double t) { return sbh * (10 + 24 / t); }
double table2_tp_sp_selective(double t) { return sbh * 34 / t; }

TEST(ActivationMemory, KorthikantiTable2Rows)
{
  auto m = load_model_or_throw("models/gpt3-175b.yaml");
  ASSERT_EQ(m.ffn, 4 * m.hidden);
  EXPECT_LT(rel_diff(layer_activation_bytes(m, derive_plan(gpt3_spec(1, false)).shape, false),
                     table2_no_parallelism()),
            1e-12);
  for (int64_t t : {2, 4, 8}) {
    SCOPED_TRACE("tp " + std::to_string(t));
    EXPECT_LT(rel_diff(layer_activation_bytes(m, derive_plan(gpt3_spec(t, false)).shape, false), table2_tp(t)), 1e-12);
    EXPECT_LT(rel_diff(layer_activation_bytes(m, derive_plan(gpt3_spec(t, true)).shape, false),
                       table2_tp_sp(t)),
              1e-12);
    EXPECT_LT(rel_diff(layer_activation_bytes(m, derive_plan(gpt3_spec(t, false)).shape, true),
                       table2_tp_selective(t)),
              1e-12);
    EXPECT_LT(rel_diff(layer_activation_bytes(m, derive_plan(gpt3_spec(t, true)).shape, true),
                       table2_tp_sp_selective(t)),
              1e-12);
  }
}

// Full recompute keeps each layer's input (2*s*b*h bytes) for every stored microbatch, plus the full
// activations of the one layer being recomputed (a working buffer, Table 2's tensor-parallel row).
TEST(ActivationMemory, FullRecomputeStoresLayerInputsOnly)
{
  const int64_t t = 8, p = 4, m = 16;
  auto s = gpt3_spec(t, false, p, m);
  s.training.recompute = Recompute::Full;
  dtsim::model::Transformer tr(s.model);
  auto r = estimate_memory(s, derive_plan(s), tr);
  const auto& first = r.stages[0];  // not the last stage: no logits
  ASSERT_EQ(first.microbatches_in_flight, p);
  const double layers_per_stage = 96.0 / double(p);
  const double expected = double(p) * layers_per_stage * 2 * sbh + table2_tp(double(t));
  EXPECT_LT(rel_diff(first.activations_bytes, expected), 1e-12);
}

// Rajbhandari 2019: 2 (bf16 weights) + 2 (bf16 gradients) + 12 (fp32 master, momentum, variance) bytes/param.
TEST(StateMemory, SixteenBytesPerParameterInBf16)
{
  for (int64_t pp : {1, 4, 8}) {
    auto s = gpt3_spec(8, true, pp, 16);
    dtsim::model::Transformer tr(s.model);
    auto r = estimate_memory(s, derive_plan(s), tr);
    ASSERT_EQ(r.stages.size(), size_t(pp));
    for (const auto& st : r.stages) {
      SCOPED_TRACE("pp " + std::to_string(pp) + " stage " + std::to_string(st.stage));
      ASSERT_GT(st.params, 0);
      EXPECT_DOUBLE_EQ(st.weights_bytes / st.params, 2.0);
      EXPECT_DOUBLE_EQ(st.gradients_bytes / st.params, 2.0);
      EXPECT_DOUBLE_EQ(st.optimizer_bytes / st.params, 12.0);
      EXPECT_DOUBLE_EQ((st.weights_bytes + st.gradients_bytes + st.optimizer_bytes) / st.params, 16.0);
    }
  }
}

// Without parallelism one device holds the whole model: 175B x 16 B = 2.8 TB (formulas.md, GPT-3 175B).
TEST(StateMemory, SingleDeviceHoldsTheWholeModel)
{
  auto s = gpt3_spec(1, false, 1, 1);
  dtsim::model::Transformer tr(s.model);
  auto r = estimate_memory(s, derive_plan(s), tr);
  EXPECT_DOUBLE_EQ(r.stages[0].params, tr.total_params(2048));
  const double states = r.stages[0].weights_bytes + r.stages[0].gradients_bytes + r.stages[0].optimizer_bytes;
  EXPECT_LT(rel_diff(states, 2.8e12), 0.01);
}

// ZB-V (Qi et al., NeurIPS 2024, Sec. 3): every stage holds 2p chunk activations of half a stage's layers, the
// activations of 1F1B's first stage (p whole microbatches); its first stage also holds the output layer, whose logits
// 1F1B keeps on its last stage.
TEST(ActivationMemory, ZbVHoldsWhat1F1BFirstStageHolds)
{
  const int64_t p = 8, m = 32;
  auto one = gpt3_spec(8, true, p, m, "1f1b");
  auto v = gpt3_spec(8, true, p, m, "zb-v", 2);
  dtsim::model::Transformer tr(one.model);
  auto r1 = estimate_memory(one, derive_plan(one), tr), rv = estimate_memory(v, derive_plan(v), tr);
  ASSERT_EQ(rv.stages.size(), size_t(p));
  for (int64_t st = 0; st < p; ++st) {
    SCOPED_TRACE("stage " + std::to_string(st));
    EXPECT_EQ(rv.stages[size_t(st)].microbatches_in_flight, 2 * p);
    if (st > 0) {
      EXPECT_LT(rel_diff(rv.stages[size_t(st)].activations_bytes, r1.stages[0].activations_bytes), 1e-12);
    }
  }
  // 1F1B's last stage: one microbatch of its layers and the logits.
  const double logits = r1.stages[size_t(p - 1)].activations_bytes - r1.stages[0].activations_bytes / double(p);
  EXPECT_GT(logits, 0);
  EXPECT_LT(rel_diff(rv.stages[0].activations_bytes - rv.stages[1].activations_bytes, logits), 1e-9);
}

// 1F1B: stage s holds min(p - s, m) microbatches, the first stage min(p, m); GPipe holds all m.
TEST(ActivationMemory, MicrobatchesInFlightPerSchedule)
{
  const int64_t p = 8;
  for (int64_t m : {4, 8, 32}) {
    SCOPED_TRACE("m " + std::to_string(m));
    auto one = gpt3_spec(8, true, p, m, "1f1b");
    auto gp = gpt3_spec(8, true, p, m, "gpipe");
    dtsim::model::Transformer tr(one.model);
    auto r1 = estimate_memory(one, derive_plan(one), tr), rg = estimate_memory(gp, derive_plan(gp), tr);
    EXPECT_EQ(r1.stages[0].microbatches_in_flight, std::min(p, m));
    for (int64_t st = 0; st < p; ++st) {
      EXPECT_EQ(r1.stages[size_t(st)].microbatches_in_flight, std::min(p - st, m));
      EXPECT_EQ(rg.stages[size_t(st)].microbatches_in_flight, m);
    }
  }
}

// Korthikanti 2022 Sec. 4.2.3 / Eq. 5: the first 1F1B stage stores p microbatches x l/p layers = l layers' worth;
// with v interleaved chunks it stores l * (1 + (p-1)/(p*v)) layers' worth.
TEST(ActivationMemory, FirstStageHoldsLLayersUnder1F1B)
{
  const int64_t t = 8, p = 8, m = 32;
  auto s = gpt3_spec(t, true, p, m);
  s.training.recompute = Recompute::Selective;
  dtsim::model::Transformer tr(s.model);
  auto r = estimate_memory(s, derive_plan(s), tr);
  EXPECT_LT(rel_diff(r.stages[0].activations_bytes, 96 * table2_tp_sp_selective(double(t))), 1e-12);
}

TEST(ActivationMemory, InterleavedFirstStageFactor)
{
  const int64_t t = 8, p = 8, v = 2, m = 32;  // 96 layers = 8 stages x 2 chunks x 6 layers
  auto s = gpt3_spec(t, true, p, m, "interleaved-1f1b", v);
  s.training.recompute = Recompute::Selective;
  dtsim::model::Transformer tr(s.model);
  auto r = estimate_memory(s, derive_plan(s), tr);
  const double layers_worth = 96.0 * (1 + double(p - 1) / double(p * v));
  EXPECT_LT(rel_diff(r.stages[0].activations_bytes, layers_worth * table2_tp_sp_selective(double(t))), 1e-12);
}

// GPT-3 175B on one device cannot fit (2.8 TB of model states in 80 GiB).
TEST(Fits, Gpt3OnOneDeviceDoesNotFit)
{
  const std::string path = source_path("scenarios/default.yaml");
  if (!std::ifstream(path))
    GTEST_SKIP() << path << " is missing";
  auto s = dtsim::scenario::load_scenario(path, {"devices=1", "parallel.tp=1", "parallel.pp=1"});
  ASSERT_EQ(s.model.hidden, 12288);
  ASSERT_EQ(s.parallel.dp, 1);
  dtsim::model::Transformer tr(s.model);
  auto r = estimate_memory(s, derive_plan(s), tr);
  EXPECT_FALSE(r.fits());
  EXPECT_GT(r.peak_bytes(), 16 * 174e9);
  EXPECT_DOUBLE_EQ(r.capacity_bytes, 80.0 * 1073741824.0);
}

TEST(Fits, TinyScenarioFits)
{
  auto s = dtsim::scenario::load_scenario(source_path("scenarios/tiny.yaml"), {});
  dtsim::model::Transformer tr(s.model);
  auto r = estimate_memory(s, derive_plan(s), tr);
  EXPECT_TRUE(r.fits());
  EXPECT_LT(r.peak_bytes(), r.capacity_bytes);
}

}  // namespace
