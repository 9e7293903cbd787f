// Issue 11, section 2: fused attention kernels from their published throughputs, fp8 as Transformer Engine runs it
// (fp8 GEMM curve, cast/transpose/amax kernels), and host launch floors. Every expected value is computed by hand
// from the cited constants (sim/kernels/attention_kernel.cpp, hardware/dgx-h100.yaml, docs/calibration.md).
#include <gtest/gtest.h>

#include <cmath>

#include "hardware/hardware_yaml.hpp"
#include "kernels/attention_kernel.hpp"
#include "kernels/compute_model.hpp"
#include "model/transformer.hpp"
#include "parallel/plan.hpp"
#include "replay/step_program.hpp"
#include "scenario/scenario_spec.hpp"
#include "shipped_device.hpp"
#include "test_paths.hpp"
#include "tiny_scenario.hpp"

namespace {

using dtsim::kernels::AttentionDirection;
using dtsim::stack::AttentionKernel;
using dtsim::test::rel_diff;
using dtsim::test::source_path;

// The devices as their hardware files describe them: the attention figures are the files'.
using dtsim::test::device_of;
const dtsim::hardware::DeviceSpec& h100_device()
{
  static const auto d = device_of("hardware/dgx-h100.yaml");
  return d;
}
const dtsim::hardware::DeviceSpec& a100_device()
{
  static const auto d = device_of("hardware/dgx-a100-80gb.yaml");
  return d;
}

// The kernel's throughput as a fraction of the device's 16-bit peak, as the published figures are read.
double attention_efficiency(const dtsim::hardware::DeviceSpec& d, AttentionKernel k, AttentionDirection dir,
                            bool causal, double seq, double head_dim)
{
  return dtsim::kernels::attention_flops_per_s(d, k, dir, causal, seq, head_dim) / d.peak_flops.at("bf16");
}

using dtsim::test::tiny_scenario;

const dtsim::model::Op* find_segment_op(const std::vector<dtsim::model::Segment>& segs, const std::string& name)
{
  for (const auto& seg : segs)
    for (const auto& op : seg.ops)
      if (op.name == name)
        return &op;
  return nullptr;
}

// The rows themselves (FlashAttention-3 paper, Fig. 5 and 6, H100 SXM5, BF16 peak 989 TFLOP/s; FlashAttention-2's
// causal row scaled by its fitted causal share, scripts/calibrate_attention.py h100).
TEST(AttentionKernel, PublishedPointsAndInterpolation)
{
  const auto F = AttentionDirection::Forward, B = AttentionDirection::Backward;
  EXPECT_DOUBLE_EQ(attention_efficiency(h100_device(), AttentionKernel::FlashAttention3, F, false, 2048, 128),
                   625.0 / 989);
  EXPECT_DOUBLE_EQ(attention_efficiency(h100_device(), AttentionKernel::CuDnn, B, false, 16384, 64), 433.0 / 989);
  // Causal forward at head dim 128 is its own published row.
  EXPECT_NEAR(attention_efficiency(h100_device(), AttentionKernel::FlashAttention2, F, true, 8192, 128), 366.0 / 989,
              1e-15);
  // Causal backward: the non-causal backward times the forward's causal share at that length.
  EXPECT_NEAR(attention_efficiency(h100_device(), AttentionKernel::FlashAttention2, B, true, 8192, 128),
              318.0 * 366 / 370 / 989, 1e-15);
  // Halfway in log2(seq) between 2k and 4k, and in log2(head_dim) between 64 and 128.
  EXPECT_NEAR(
      attention_efficiency(h100_device(), AttentionKernel::FlashAttention3, F, false, 2048 * std::sqrt(2.0), 128),
      (625.0 + 638) / 2 / 989, 1e-12);
  EXPECT_NEAR(attention_efficiency(h100_device(), AttentionKernel::FlashAttention2, F, false, 512, 64 * std::sqrt(2.0)),
              (282.0 + 309) / 2 / 989, 1e-12);
  // Clamped outside 512..16k and 64..128.
  EXPECT_DOUBLE_EQ(attention_efficiency(h100_device(), AttentionKernel::FlashAttention3, F, false, 65536, 256),
                   attention_efficiency(h100_device(), AttentionKernel::FlashAttention3, F, false, 16384, 128));
  // A100: FlashAttention-2's 230 TFLOP/s forward (its paper) at the long-sequence head-dim-128 point, of 312.
  EXPECT_NEAR(attention_efficiency(a100_device(), AttentionKernel::FlashAttention2, F, false, 16384, 128), 230.0 / 312,
              1e-12);
}

// FlashAttention-2's causal share is fitted to the one text-form measurement of it on each device: the Azure
// AI-benchmarking-guide's forward + backward, causal, head dim 128, batch 2, sequence 8192 (flash-attention's
// benchmark counts the backward as 2.5 forwards): 327.9 TFLOP/s on ND H100 v5, 329.3 on ND H200 v5. The rows are
// rounded to whole TFLOP/s, so the fit holds to 0.1%.
TEST(AttentionKernel, FlashAttention2MeetsTheMeasuredForwardBackward)
{
  const auto fwd_bwd = [](const dtsim::hardware::DeviceSpec& d) {
    const double f = dtsim::kernels::attention_flops_per_s(d, AttentionKernel::FlashAttention2,
                                                           AttentionDirection::Forward, true, 8192, 128);
    const double b = dtsim::kernels::attention_flops_per_s(d, AttentionKernel::FlashAttention2,
                                                           AttentionDirection::Backward, true, 8192, 128);
    return 3.5 / (1 / f + 2.5 / b);
  };
  EXPECT_LT(rel_diff(fwd_bwd(h100_device()), 327.9e12), 1e-3);
  EXPECT_LT(rel_diff(fwd_bwd(device_of("hardware/dgx-h200.yaml")), 329.3e12), 1e-3);
}

// A device whose file holds no figures for a kernel does not run it: a stack naming it runs FlashAttention-2, and
// a device without FlashAttention-2's figures cannot fuse attention at all (an input error naming the key).
TEST(AttentionKernel, FiguresComeFromTheHardwareFile)
{
  EXPECT_TRUE(dtsim::kernels::has_attention_figures(h100_device(), AttentionKernel::FlashAttention3));
  EXPECT_FALSE(dtsim::kernels::has_attention_figures(a100_device(), AttentionKernel::FlashAttention3));
  dtsim::hardware::DeviceSpec bare = h100_device();
  bare.attention.clear();
  EXPECT_THROW(dtsim::kernels::attention_flops_per_s(bare, AttentionKernel::FlashAttention2,
                                                     AttentionDirection::Forward, false, 4096, 128),
               dtsim::InternalError);
}

TEST(AttentionKernel, ChoiceOfKernel)
{
  using dtsim::kernels::attention_kernel_for;
  EXPECT_EQ(attention_kernel_for(h100_device(), AttentionKernel::Unfused, false), AttentionKernel::FlashAttention2);
  EXPECT_EQ(attention_kernel_for(h100_device(), AttentionKernel::CuDnn, true), AttentionKernel::CuDnn);
  EXPECT_EQ(attention_kernel_for(a100_device(), AttentionKernel::FlashAttention3, true),
            AttentionKernel::FlashAttention2);
  EXPECT_EQ(attention_kernel_for(a100_device(), AttentionKernel::CuDnn, true), AttentionKernel::FlashAttention2);
}

// A causal kernel does half the counted work: its time is (counted FLOPs / 2) / published causal throughput.
TEST(AttentionKernel, CausalTimeIsHalfTheCountedWorkAtThePublishedRate)
{
  auto s = tiny_scenario({"hardware=../hardware/dgx-h100.yaml", "training.flash_attention=true"});
  dtsim::model::Transformer t(s.model);
  dtsim::model::Shape sh{1, 8192, 1, false, 2, 1, 1.0, 1, true};
  auto layer = t.layer(sh);
  const auto* scores = find_segment_op(layer.forward, "attn_scores");
  ASSERT_TRUE(scores);
  EXPECT_EQ(scores->fused, dtsim::model::Op::Fused::AttentionForward);
  EXPECT_TRUE(scores->causal);
  dtsim::model::Op op = *scores;
  op.bytes = 0;  // compute only
  dtsim::kernels::ComputeModel cm(s.hardware.device, "bf16");
  // tiny-gpt: head dim 32 -> clamped to the head-dim-64 rows; causal factor 366/370 at 8k; default kernel FA2.
  const double eff = 322.0 * 366 / 370 / 989;
  EXPECT_LT(rel_diff(cm.seconds(op), op.flops() / 2 / (eff * 989e12)), 1e-12);
  // Model FLOPs unchanged: the op still counts the full score matrix.
  EXPECT_DOUBLE_EQ(op.flops(), 2.0 * 8 * 8192 * 8192 * 32);
  const auto* grad = find_segment_op(layer.backward, "attn_scores.recompute");
  ASSERT_TRUE(grad);
  EXPECT_EQ(grad->fused, dtsim::model::Op::Fused::AttentionBackward);
}

// The fp8 linear GEMMs follow the fp8 curve fitted to cuBLASLt FP8 measurements (max 0.72, half_area 2^21,
// exponent 1.5, half_k 512); the bf16 GEMMs keep the bf16 curve.
TEST(Fp8Physics, Fp8CurveAtTheFp8Peak)
{
  auto s = tiny_scenario({"hardware=../hardware/dgx-h100.yaml", "training.precision=fp8"});
  ASSERT_TRUE(s.hardware.device.has_gemm_fp8);
  dtsim::kernels::ComputeModel fp8(s.hardware.device, "fp8");
  dtsim::model::Op big;
  big.kind = dtsim::model::Op::Kind::Gemm;
  big.linear = true;
  big.m = big.n = big.k = 16384;
  const double A = 16384.0 * 16384, ha = 2097152;
  const double eff = 0.72 * std::pow(A, 1.5) / (std::pow(A, 1.5) + std::pow(ha, 1.5)) * 16384 / (16384 + 512);
  EXPECT_LT(rel_diff(fp8.seconds(big), big.flops() / (1979e12 * eff)), 1e-12);
}

// Transformer Engine's casts, per linear layer (tiny-gpt h 256, ffn 1024, heads 8 x 32, tp 2, micro batch 4,
// sequence 512: 2048 tokens). Fused cast-transpose: read 2 bytes, write 1 + 1 per element; weights cast once per step
// (4 microbatches share it here); current scaling adds a 2-byte amax read of each tensor.
// proj (a plain linear layer): input 2048 x 128, weight 128 x 256 per rank, output gradient 2048 x 256.
// fc1 follows layernorm2 (TELayerNormColumnParallelLinear): input 2048 x 256, weight 256 x 512 per rank, output
// gradient 2048 x 512. Under delayed scaling the layernorm writes the fp8 input (2 bytes read, 1 written per element
// instead of 2) and the backward transposes it (1 + 1 bytes per element); only the weights are cast in the forward.
TEST(Fp8Physics, CastTransposeAndAmaxBytes)
{
  auto s = tiny_scenario({"hardware=../hardware/dgx-h100.yaml", "training.precision=fp8"});
  dtsim::model::Transformer t(s.model);
  dtsim::model::Shape sh{4, 512, 2, false, 2, 1, 1.0, 1, false, true};
  sh.fp8_weight_cast_share = 0.25;
  auto delayed = t.layer(sh);
  EXPECT_DOUBLE_EQ(find_segment_op(delayed.forward, "proj.fp8_cast")->bytes, 4.0 * 2048 * 128 + 0.25 * 4.0 * 128 * 256);
  EXPECT_DOUBLE_EQ(find_segment_op(delayed.backward, "proj.fp8_cast.bwd")->bytes, 4.0 * 2048 * 256);
  const auto* fwd = find_segment_op(delayed.forward, "fc1.fp8_cast");
  const auto* bwd = find_segment_op(delayed.backward, "fc1.fp8_cast.bwd");
  ASSERT_TRUE(fwd && bwd);
  EXPECT_DOUBLE_EQ(fwd->bytes, 0.25 * 4.0 * 256 * 512);
  EXPECT_DOUBLE_EQ(bwd->bytes, 4.0 * 2048 * 512 + 2.0 * 2048 * 256);
  EXPECT_DOUBLE_EQ(find_segment_op(delayed.forward, "layernorm2")->bytes, 3.0 * 2048 * 256);
  sh.fp8_current_scaling = true;
  auto current = t.layer(sh);
  EXPECT_DOUBLE_EQ(find_segment_op(current.forward, "fc1.fp8_cast")->bytes, 6.0 * 2048 * 256 + 0.25 * 6.0 * 256 * 512);
  EXPECT_DOUBLE_EQ(find_segment_op(current.backward, "fc1.fp8_cast.bwd")->bytes, 6.0 * 2048 * 512);
  EXPECT_DOUBLE_EQ(find_segment_op(current.forward, "layernorm2")->bytes, 4.0 * 2048 * 256);
  // bf16: no cast kernels.
  sh.fp8 = false;
  EXPECT_EQ(find_segment_op(t.layer(sh).forward, "fc1.fp8_cast"), nullptr);
}

// On a device that runs fp8 GEMMs in every layout (Blackwell: device.fp8_non_tn_gemm) Transformer Engine's casts
// write no transpose: read 2, write 1 per element (current scaling: read 2 more for the amax), and the delayed-scaling
// layernorm's fp8 input is not transposed in backward. Same layers as above.
TEST(Fp8Physics, NoTransposeWhereFp8GemmsTakeEveryLayout)
{
  auto s = tiny_scenario({"hardware=../hardware/dgx-h100.yaml", "training.precision=fp8"});
  dtsim::model::Transformer t(s.model);
  dtsim::model::Shape sh{4, 512, 2, false, 2, 1, 1.0, 1, false, true};
  sh.fp8_weight_cast_share = 0.25;
  sh.fp8_transpose = false;
  auto delayed = t.layer(sh);
  EXPECT_DOUBLE_EQ(find_segment_op(delayed.forward, "proj.fp8_cast")->bytes, 3.0 * 2048 * 128 + 0.25 * 3.0 * 128 * 256);
  EXPECT_DOUBLE_EQ(find_segment_op(delayed.backward, "proj.fp8_cast.bwd")->bytes, 3.0 * 2048 * 256);
  EXPECT_DOUBLE_EQ(find_segment_op(delayed.forward, "fc1.fp8_cast")->bytes, 0.25 * 3.0 * 256 * 512);
  EXPECT_DOUBLE_EQ(find_segment_op(delayed.backward, "fc1.fp8_cast.bwd")->bytes, 3.0 * 2048 * 512);
  sh.fp8_current_scaling = true;
  auto current = t.layer(sh);
  EXPECT_DOUBLE_EQ(find_segment_op(current.forward, "fc1.fp8_cast")->bytes, 5.0 * 2048 * 256 + 0.25 * 5.0 * 256 * 512);
  EXPECT_DOUBLE_EQ(find_segment_op(current.backward, "fc1.fp8_cast.bwd")->bytes, 5.0 * 2048 * 512);
}

// Under sequence parallelism a tensor gathered over tp is cast on the rank's own rows (1024 of the 2048), row-wise
// only, gathered in fp8 (1 byte per element), and the gathered rows are transposed after the gather where the device
// needs it (read 1, write 1): TE 2.x distributed.py _all_gather_fp8, TE 1.8 base.py grad_output_preprocess. fc1's
// input is transposed in backward, after it is gathered again for the weight gradient; fc2's output gradient (the
// row-parallel layer's, 2048 x 256 gathered) at once. Current scaling all-reduces each such tensor's amax (one fp32)
// over tp before its cast: before QKV and fc1 forward, before the casts of fc2's and proj's output gradients backward.
TEST(Fp8Physics, CastOnOwnRowsBeforeTheGather)
{
  auto s = tiny_scenario({"hardware=../hardware/dgx-h100.yaml", "training.precision=fp8"});
  dtsim::model::Transformer t(s.model);
  dtsim::model::Shape sh{4, 512, 2, true, 2, 1, 1.0, 1, false, true};
  sh.fp8_weight_cast_share = 0.25;
  auto collectives = [](const std::vector<dtsim::model::Segment>& segs, dtsim::model::TpCollective c) {
    std::vector<double> bytes;
    for (const auto& seg : segs)
      if (seg.collective == c)
        bytes.push_back(seg.collective_bytes);
    return bytes;
  };
  using dtsim::model::TpCollective;
  const double Th = 2048.0 * 256;
  auto delayed = t.layer(sh);
  // Delayed scaling: the layernorm writes the fp8 input on the rank's rows; no amax all-reduce.
  EXPECT_DOUBLE_EQ(find_segment_op(delayed.forward, "layernorm2")->bytes, 3.0 * 1024 * 256);
  EXPECT_DOUBLE_EQ(find_segment_op(delayed.forward, "fc1.fp8_cast")->bytes, 0.25 * 4.0 * 256 * 512);
  EXPECT_DOUBLE_EQ(find_segment_op(delayed.backward, "fc1.fp8_cast.bwd")->bytes, 4.0 * 2048 * 512 + 2.0 * 2048 * 256);
  EXPECT_DOUBLE_EQ(find_segment_op(delayed.forward, "fc2.fp8_cast")->bytes, 4.0 * 2048 * 512 + 0.25 * 4.0 * 512 * 256);
  EXPECT_DOUBLE_EQ(find_segment_op(delayed.backward, "fc2.fp8_cast.bwd")->bytes, 3.0 * 1024 * 256 + 2.0 * 2048 * 256);
  EXPECT_TRUE(collectives(delayed.forward, TpCollective::AllReduce).empty());
  EXPECT_TRUE(collectives(delayed.backward, TpCollective::AllReduce).empty());
  EXPECT_EQ(collectives(delayed.forward, TpCollective::AllGather), (std::vector<double>{Th, Th}));
  EXPECT_EQ(collectives(delayed.backward, TpCollective::AllGather), (std::vector<double>{Th, Th, Th, Th}));
  // Current scaling: fc1's input cast reads its 1024 rows twice (amax, cast) and writes 1 byte; the weights' cast
  // and the ungathered tensors keep read 2 + 2, write 1 + 1.
  sh.fp8_current_scaling = true;
  auto current = t.layer(sh);
  EXPECT_DOUBLE_EQ(find_segment_op(current.forward, "fc1.fp8_cast")->bytes, 5.0 * 1024 * 256 + 0.25 * 6.0 * 256 * 512);
  EXPECT_DOUBLE_EQ(find_segment_op(current.backward, "fc1.fp8_cast.bwd")->bytes, 6.0 * 2048 * 512 + 2.0 * 2048 * 256);
  EXPECT_DOUBLE_EQ(find_segment_op(current.backward, "fc2.fp8_cast.bwd")->bytes, 5.0 * 1024 * 256 + 2.0 * 2048 * 256);
  EXPECT_EQ(collectives(current.forward, TpCollective::AllReduce), (std::vector<double>{4, 4}));
  EXPECT_EQ(collectives(current.backward, TpCollective::AllReduce), (std::vector<double>{4, 4}));
  EXPECT_EQ(collectives(current.forward, TpCollective::AllGather), (std::vector<double>{Th, Th}));
  // With the norm's amax (fp8_norm_amax) fc1's input cast reads once; on Blackwell (no transpose) nothing is
  // transposed after the gathers.
  sh.fp8_norm_amax = true;
  sh.fp8_transpose = false;
  auto blackwell = t.layer(sh);
  EXPECT_DOUBLE_EQ(find_segment_op(blackwell.forward, "fc1.fp8_cast")->bytes,
                   3.0 * 1024 * 256 + 0.25 * 5.0 * 256 * 512);
  EXPECT_DOUBLE_EQ(find_segment_op(blackwell.backward, "fc1.fp8_cast.bwd")->bytes, 5.0 * 2048 * 512);
  EXPECT_DOUBLE_EQ(find_segment_op(blackwell.backward, "fc2.fp8_cast.bwd")->bytes, 5.0 * 1024 * 256);
  EXPECT_EQ(collectives(blackwell.forward, TpCollective::AllReduce), (std::vector<double>{4, 4}));
}

// Under current scaling from Transformer Engine 2.8 on, the norm in front of QKV and fc1 takes its output's amax
// (FUSED_NORM_AMAX_FP8, training.fp8_norm_amax): that input's cast reads it once, read 2 and write 1 + 1 (Hopper),
// where the weights' cast and every output gradient's keep their amax pass (read 2 more). A plain linear layer (proj)
// takes its input from attention, not from a norm: its cast keeps the amax pass. Same layers as above.
TEST(Fp8Physics, NormTakesTheAmaxOfItsOutput)
{
  auto s = tiny_scenario({"hardware=../hardware/dgx-h100.yaml", "training.precision=fp8"});
  dtsim::model::Transformer t(s.model);
  dtsim::model::Shape sh{4, 512, 2, false, 2, 1, 1.0, 1, false, true};
  sh.fp8_weight_cast_share = 0.25;
  sh.fp8_current_scaling = true;
  sh.fp8_norm_amax = true;
  auto fused = t.layer(sh);
  EXPECT_DOUBLE_EQ(find_segment_op(fused.forward, "fc1.fp8_cast")->bytes, 4.0 * 2048 * 256 + 0.25 * 6.0 * 256 * 512);
  EXPECT_DOUBLE_EQ(find_segment_op(fused.backward, "fc1.fp8_cast.bwd")->bytes, 6.0 * 2048 * 512);
  EXPECT_DOUBLE_EQ(find_segment_op(fused.forward, "layernorm2")->bytes, 4.0 * 2048 * 256);  // still writes 16-bit
  EXPECT_DOUBLE_EQ(find_segment_op(fused.forward, "proj.fp8_cast")->bytes, 6.0 * 2048 * 128 + 0.25 * 6.0 * 128 * 256);
  sh.fp8_transpose = false;  // Blackwell: no transpose written
  EXPECT_DOUBLE_EQ(find_segment_op(t.layer(sh).forward, "qkv.fp8_cast")->bytes,
                   3.0 * 2048 * 256 + 0.25 * 5.0 * 256 * (3 * 256 / 2));
}

// training.fp8_norm_amax reaches the layer only with fp8 current scaling, and is refused (exit 2) elsewhere.
TEST(Fp8Physics, NormAmaxOnlyUnderCurrentScaling)
{
  auto plan = [](std::vector<std::string> sets) {
    sets.push_back("hardware=../hardware/dgx-h100.yaml");
    return dtsim::parallel::derive_plan(tiny_scenario(sets)).shape;
  };
  EXPECT_TRUE(plan({"training.precision=fp8", "training.fp8_recipe=current", "training.fp8_norm_amax=true"})
                  .fp8_norm_amax);
  EXPECT_FALSE(plan({"training.precision=fp8", "training.fp8_recipe=current"}).fp8_norm_amax);
  EXPECT_THROW(tiny_scenario({"hardware=../hardware/dgx-h100.yaml", "training.precision=fp8",
                              "training.fp8_recipe=delayed", "training.fp8_norm_amax=true"}),
               std::exception);
  EXPECT_THROW(
      tiny_scenario({"hardware=../hardware/dgx-h100.yaml", "training.precision=bf16", "training.fp8_norm_amax=true"}),
      std::exception);
}

// The device's fact reaches the layer: the Blackwell files say fp8_non_tn_gemm, the Hopper ones leave it out.
TEST(Fp8Physics, TransposeFromTheHardwareFile)
{
  auto transpose = [](const std::string& hardware) {
    return dtsim::parallel::derive_plan(tiny_scenario({"hardware=../hardware/" + hardware, "training.precision=fp8"}))
        .shape.fp8_transpose;
  };
  EXPECT_TRUE(transpose("dgx-h100.yaml"));
  EXPECT_TRUE(transpose("dgx-h200.yaml"));
  EXPECT_FALSE(transpose("dgx-b200.yaml"));
}

// The recipe a layer runs: the scenario's training.fp8_recipe, else the stack's kernels.fp8_recipe, else delayed.
TEST(Fp8Physics, RecipeFromTheScenarioElseTheStack)
{
  auto current_scaling = [](std::vector<std::string> sets) {
    sets.push_back("hardware=../hardware/dgx-h100.yaml");
    sets.push_back("training.precision=fp8");
    return dtsim::parallel::derive_plan(tiny_scenario(sets)).shape.fp8_current_scaling;
  };
  const std::string stack = "stack=" + source_path("tests/unit/data/stack-kernels.yaml");
  EXPECT_FALSE(current_scaling({}));
  EXPECT_TRUE(current_scaling({"training.fp8_recipe=current"}));
  EXPECT_TRUE(current_scaling({stack}));
  EXPECT_FALSE(current_scaling({stack, "training.fp8_recipe=delayed"}));
}

// The embedding's backward is dense: PyTorch zeroes a V/tp x h gradient (e bytes per element), scatters the
// microbatch's rows into it (2e per token and hidden unit, as before), and the DDP hook adds it into the main
// gradient (read e and g, write g). tiny-gpt: V 1024, h 256, tp 2, 4 x 512 tokens.
TEST(EmbeddingBackward, DenseGradientAddedIntoTheMainGradient)
{
  auto backward_bytes = [](std::vector<std::string> sets) {
    auto s = tiny_scenario(sets);
    dtsim::model::Transformer t(s.model);
    const auto pass = t.embedding(dtsim::parallel::derive_plan(s).shape);
    const auto* op = find_segment_op(pass.backward, "embedding.bwd");
    return op ? op->bytes : -1.0;
  };
  const double rows = 2.0 * 2048 * 256, slice = 1024.0 / 2 * 256;
  EXPECT_DOUBLE_EQ(backward_bytes({"stack=none"}), 2 * rows + (2 * 2 + 2 * 2) * slice);
  // fp32 main gradients (the stack's memory.fp32_gradients, Megatron-LM's default under bf16): g = 4.
  EXPECT_DOUBLE_EQ(backward_bytes({"stack=" + source_path("hardware/stacks/megatron-lm-2022.yaml")}),
                   2 * rows + (2 * 2 + 2 * 4) * slice);
}

// The GPU cannot run ahead of the host: a run of n kernels takes at least n * launch + (its share of) per_layer;
// with CUDA graphs, one graph launch.
TEST(HostOverheads, LaunchFloors)
{
  auto s = tiny_scenario({});
  dtsim::stack::StackSpec st;
  st.host.launch_s = 10e-6;
  st.host.per_layer_s = 90e-6;
  dtsim::model::Op k;
  k.kind = dtsim::model::Op::Kind::Memory;
  k.bytes = 1000;  // 2 us each (the device's minimum kernel time)
  k.layer_share = 1.0 / 3;
  std::vector<dtsim::model::Op> run{k, k, k};
  dtsim::kernels::ComputeModel none(s.hardware.device, "bf16"), eager(s.hardware.device, "bf16", st);
  EXPECT_DOUBLE_EQ(none.run_seconds(run), 3 * 2e-6);
  EXPECT_NEAR(eager.run_seconds(run), 3 * 10e-6 + 90e-6, 1e-15);
  st.cuda_graphs = true;
  dtsim::kernels::ComputeModel graphs(s.hardware.device, "bf16", st);
  EXPECT_DOUBLE_EQ(graphs.run_seconds(run), 10e-6);
  // A long kernel hides the host: the GPU time stands.
  k.bytes = 1e9;
  std::vector<dtsim::model::Op> big{k};
  EXPECT_DOUBLE_EQ(eager.run_seconds(big), none.seconds(k));
}

}  // namespace
