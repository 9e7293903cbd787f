// Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models", arXiv:2205.05198) as a
// memory validation set (issue 35, item 7; ctest validation.korthikanti_memory). The paper publishes no measured
// per-GPU memory of its 22B-1T runs: Section 6.1 says Figure 7 shows Table 2's required memory as a percentage of
// the tensor-parallel baseline (its Equation 2), and Figure 7's bars are an image. What it states in text is held
// here against dtsim's per-layer activation bytes (parallel::layer_activation_bytes):
// - Section 5: selective recomputation saves 70% (GPT-3) and 65% (MT-NLG) of the activation memory (no TP);
// - Section 6.1 on Table 3's configurations (t = 8, s = 2048): sequence parallelism and selective recomputation
//   together bring the memory "under 20%" of the baseline, a "~5x" reduction; full recomputation is "at 10%".
// Appendix B's one measured figure (Figure 9: the first 530B stage saves sbhp = 2.73 GB by freeing each stage's
// output tensor) is a saving dtsim takes for granted: it never counts the output tensor.
#include <gtest/gtest.h>

#include "model/transformer.hpp"
#include "parallel/memory.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::model::ModelSpec;
using dtsim::model::Shape;
using dtsim::parallel::layer_activation_bytes;
using dtsim::test::load_model_or_throw;

struct Config {
  const char* name;
  int64_t heads, hidden, layers;
};

// Table 3 of the paper (GPT shapes: f = 4h, no GQA, vocabulary 51,200).
constexpr Config kTable3[] = {{"22B", 64, 6144, 48}, {"175B", 96, 12288, 96}, {"530B", 128, 20480, 105},
                              {"1T", 160, 25600, 128}};

ModelSpec gpt(const Config& c)
{
  ModelSpec m = load_model_or_throw("models/gpt3-175b.yaml");
  m.heads = m.kv_heads = c.heads;
  m.hidden = c.hidden;
  m.head_dim = c.hidden / c.heads;
  m.ffn = 4 * c.hidden;
  m.layers = c.layers;
  return m;
}

Shape tp_shape(int64_t tp, bool sp)
{
  Shape sh;
  sh.micro_batch = 1;
  sh.seq = 2048;
  sh.tp = tp;
  sh.sp = sp;
  return sh;
}

TEST(KorthikantiMemory, SelectiveRecomputationSavesSeventyAndSixtyFivePercent)
{
  // GPT-3 (a 96, h 12288) and MT-NLG (a 128, h 20480) at s 2048, without tensor parallelism.
  const std::pair<Config, double> stated[] = {{kTable3[1], 0.70}, {kTable3[2], 0.65}};
  for (const auto& [c, saving] : stated) {
    const ModelSpec m = gpt(c);
    const double all = layer_activation_bytes(m, tp_shape(1, false), false);
    const double selective = layer_activation_bytes(m, tp_shape(1, false), true);
    const double saved = 1.0 - selective / all;
    std::printf("%-5s selective recomputation saves %.1f%% (paper: %.0f%%)\n", c.name, 100 * saved, 100 * saving);
    EXPECT_NEAR(saved, saving, 0.005) << c.name;
  }
}

TEST(KorthikantiMemory, SequenceParallelAndSelectiveTogetherUnderTwentyPercent)
{
  for (const Config& c : kTable3) {
    const ModelSpec m = gpt(c);
    const double baseline = layer_activation_bytes(m, tp_shape(8, false), false);  // Equation 2
    const double sp = layer_activation_bytes(m, tp_shape(8, true), false) / baseline;
    const double selective = layer_activation_bytes(m, tp_shape(8, false), true) / baseline;
    const double both = layer_activation_bytes(m, tp_shape(8, true), true) / baseline;
    // Full recomputation keeps each layer's input whole on every rank: 2sbh bytes.
    const double full = 2.0 * 2048.0 * double(c.hidden) / baseline;
    std::printf("%-5s of the TP baseline: sp %.1f%%, selective %.1f%%, both %.1f%% (%.1fx less), full %.1f%%\n",
                c.name, 100 * sp, 100 * selective, 100 * both, 1 / both, 100 * full);
    // "Combined provide a 5x reduction bringing the memory requirements to under 20%": 16-20% for these shapes.
    EXPECT_NEAR(both, 0.20, 0.045) << c.name;
    EXPECT_NEAR(1.0 / both, 5.0, 1.25) << c.name;
    // "Individually, both techniques cut the memory requirement nearly in half".
    EXPECT_LT(sp, 0.70) << c.name;
    EXPECT_LT(selective, 0.65) << c.name;
    // "Only ~2x of the full activation recomputation which is at 10% of the baseline".
    EXPECT_NEAR(full, 0.10, 0.025) << c.name;
    EXPECT_NEAR(both / full, 2.0, 0.2) << c.name;
  }
}

}  // namespace
