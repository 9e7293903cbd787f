// training.precision mxfp8 and nvfp4 (Transformer Engine's MXFP8BlockScaling and NVFP4BlockScaling, docs/precisions.md)
// on B200: which GEMMs run at the block-scaled peak and on which curve, the bytes of the block-scaled casts, of the
// saved inputs and of the weights' copies, and the refusal by a device without the precision. Every expected value is
// computed by hand from the formats (1x32 E8M0 scales for MXFP8, 1x16 E4M3 scales for NVFP4) and from
// hardware/dgx-b200.yaml, on tiny-gpt (h 256, ffn 1024, 8 heads; tp 2, no sp; micro batch 4, sequence 512).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/diagnostics.hpp"
#include "kernels/compute_model.hpp"
#include "parallel/memory.hpp"
#include "parallel/precision.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::parallel::derive_plan;
using dtsim::parallel::precision_of;
using dtsim::test::rel_diff;
using dtsim::test::source_path;

dtsim::scenario::ScenarioSpec tiny_on(const std::string& hardware, const std::string& precision)
{
  return dtsim::scenario::load_scenario(source_path("scenarios/tiny.yaml"),
                                        {"hardware=../hardware/" + hardware, "training.precision=" + precision});
}

const dtsim::model::Op* find(const dtsim::model::PassProgram& p, const std::string& name, bool backward = false)
{
  for (const auto& seg : backward ? p.backward : p.forward)
    for (const auto& op : seg.ops)
      if (op.name == name)
        return &op;
  return nullptr;
}

TEST(Precision, BlockScaledBytes)
{
  const auto mx = precision_of("mxfp8"), nv = precision_of("nvfp4"), f8 = precision_of("fp8");
  EXPECT_DOUBLE_EQ(mx.block_scaled_bytes, 1.0 + 1.0 / 32);   // E4M3 + one E8M0 per 32
  EXPECT_DOUBLE_EQ(nv.block_scaled_bytes, 0.5 + 1.0 / 16);   // E2M1 + one E4M3 per 16
  EXPECT_DOUBLE_EQ(mx.weight_copy_bytes, 2 * (1.0 + 1.0 / 32));  // row- and column-wise
  EXPECT_DOUBLE_EQ(nv.weight_copy_bytes, 2 * (0.5 + 1.0 / 16));
  EXPECT_DOUBLE_EQ(f8.weight_copy_bytes, 1.0);
  EXPECT_EQ(f8.block_scaled_bytes, 0.0);
  EXPECT_TRUE(nv.per_tensor_amax);
  EXPECT_FALSE(mx.per_tensor_amax);
  for (const auto& p : {mx, nv, f8}) {
    EXPECT_TRUE(p.fp8_linear);
    EXPECT_EQ(p.gradient_bytes, 2);  // gradients, optimizer states and communication as in bf16
    EXPECT_EQ(p.optimizer_bytes_per_param, 12);
  }
  EXPECT_FALSE(precision_of("bf16").fp8_linear);
}

// The linear layers' GEMMs read block-scaled inputs; a cast kernel before each writes both copies; attention stays
// 16-bit and its GEMMs run at the bf16 peak.
TEST(Precision, CastsAndGemmInputs)
{
  for (const std::string name : {"mxfp8", "nvfp4"}) {
    auto s = tiny_on("dgx-b200.yaml", name);
    const auto plan = derive_plan(s);
    dtsim::model::Transformer t(s.model);
    const auto layer = t.layer(plan.shape);
    const double q = precision_of(name).block_scaled_bytes;
    // NVFP4's per-tensor amax reads the 16-bit tensor once more. Its inputs and output gradients, whose column-wise
    // copies get the Hadamard transform, read it no more than the weights: Transformer Engine 2.14 takes both amaxes
    // in one pass and casts both copies in one kernel (nvte_quantize_with_hadamard_transform; 2.13 read it thrice).
    const double amax = name == "nvfp4" ? 2.0 : 0.0;
    const auto* fc1 = find(layer, "fc1");
    const auto* cast = find(layer, "fc1.block_cast");
    ASSERT_TRUE(fc1 && cast) << name;
    EXPECT_TRUE(fc1->linear);
    // fc1 per TP rank: (2048 x 256) x (256 x 512), block-scaled inputs, a 16-bit result.
    EXPECT_LT(rel_diff(fc1->bytes, q * (2048.0 * 256 + 256.0 * 512) + 2.0 * 2048 * 512), 1e-15) << name;
    // The cast: read 2 bytes, write two copies of q (and the amax pass): the input, and the weights' share of one
    // cast per step (64 / (4 x 2 dp) = 8 microbatches per step: an eighth).
    const double per_weight = 2 + 2 * q + amax, per = per_weight;
    EXPECT_LT(rel_diff(cast->bytes, per * 2048.0 * 256 + per_weight * 0.125 * 256 * 512), 1e-15) << name;
    const auto* cast_bwd = find(layer, "fc1.block_cast.bwd", true);
    ASSERT_TRUE(cast_bwd) << name;
    EXPECT_LT(rel_diff(cast_bwd->bytes, per * 2048.0 * 512), 1e-15) << name;
    const auto* scores = find(layer, "attn_scores");
    ASSERT_TRUE(scores);
    EXPECT_FALSE(scores->linear);
  }
}

// With sequence parallelism Transformer Engine (2.13) quantizes a tensor before gathering it over tp: the layernorm
// output is cast on the rank's own rows and gathered as its row-wise copy (q bytes per element), gathered again in
// backward as its column-wise copy (q); a row-parallel layer's output gradient is cast on the rank's own rows and
// gathered with both copies (2q). tiny-gpt with sp: 2048 tokens per microbatch, 1024 per rank, h 256.
TEST(Precision, QuantizedGathersUnderSequenceParallelism)
{
  for (const std::string name : {"mxfp8", "nvfp4"}) {
    auto s = dtsim::scenario::load_scenario(source_path("scenarios/tiny.yaml"),
                                            {"hardware=../hardware/dgx-b200.yaml", "training.precision=" + name,
                                             "parallel.sp=true"});
    const auto plan = derive_plan(s);
    dtsim::model::Transformer t(s.model);
    const auto layer = t.layer(plan.shape);
    const double q = precision_of(name).block_scaled_bytes;
    const bool nv = name == "nvfp4";
    const double per_weight = 2 + 2 * q + (nv ? 2.0 : 0.0), per = per_weight;  // one amax pass, one cast (TE 2.14)
    const double T = 2048, h = 256;
    std::vector<double> fwd, bwd, fwd_amax, bwd_amax;
    for (const auto& seg : layer.forward) {
      if (seg.collective == dtsim::model::TpCollective::AllGather)
        fwd.push_back(seg.collective_bytes);
      if (seg.collective == dtsim::model::TpCollective::AllReduce)
        fwd_amax.push_back(seg.collective_bytes);
    }
    for (const auto& seg : layer.backward) {
      if (seg.collective == dtsim::model::TpCollective::AllGather)
        bwd.push_back(seg.collective_bytes);
      if (seg.collective == dtsim::model::TpCollective::AllReduce)
        bwd_amax.push_back(seg.collective_bytes);
    }
    // NVFP4's amaxes (row- and column-wise, two fp32) all-reduced over tp before the casts of the gathered tensors:
    // forward the inputs of QKV and fc1, backward the output gradients of fc2 and proj. MXFP8 has no per-tensor scale.
    const std::vector<double> amaxes = nv ? std::vector<double>{8, 8} : std::vector<double>{};
    EXPECT_EQ(fwd_amax, amaxes) << name;
    EXPECT_EQ(bwd_amax, amaxes) << name;
    ASSERT_EQ(fwd.size(), 2u) << name;  // before QKV and before fc1
    for (double b : fwd)
      EXPECT_LT(rel_diff(b, q * T * h), 1e-15) << name;
    // Backward: the output gradients of fc2 and proj (2q) and the inputs of fc1 and QKV again (q).
    ASSERT_EQ(bwd.size(), 4u) << name;
    EXPECT_LT(rel_diff(bwd[0], 2 * q * T * h), 1e-15) << name;
    EXPECT_LT(rel_diff(bwd[1], q * T * h), 1e-15) << name;
    EXPECT_LT(rel_diff(bwd[2], 2 * q * T * h), 1e-15) << name;
    EXPECT_LT(rel_diff(bwd[3], q * T * h), 1e-15) << name;
    // fc1's input cast reads the rank's 1024 rows (weights: an eighth of a cast per microbatch, 256 x 512 per rank);
    // fc2's output-gradient cast in backward reads the rank's rows of the 256-wide gradient. NVFP4's column-wise
    // copies are transposed: each one gathered in backward (fc1's input, fc2's output gradient, 2048 x 256) is put in
    // order by a copy, read and written (2q per element).
    const double reorder = nv ? 2 * q * T * h : 0.0;
    const auto* cast = find(layer, "fc1.block_cast");
    const auto* fc1_bwd = find(layer, "fc1.block_cast.bwd", true);
    const auto* fc2_bwd = find(layer, "fc2.block_cast.bwd", true);
    ASSERT_TRUE(cast && fc1_bwd && fc2_bwd) << name;
    EXPECT_LT(rel_diff(cast->bytes, per * 1024.0 * 256 + per_weight * 0.125 * 256 * 512), 1e-15) << name;
    EXPECT_LT(rel_diff(fc1_bwd->bytes, per * 2048.0 * 512 + reorder), 1e-15) << name;
    EXPECT_LT(rel_diff(fc2_bwd->bytes, per * 1024.0 * 256 + reorder), 1e-15) << name;
  }
}

// The kernels besides the casts before a block-scaled GEMM (Transformer Engine 2.13: swizzle_scales_for_gemm in
// pytorch/csrc/extensions/swizzle.cpp; nvte_nvfp4_compute_per_tensor_scale in common/gemm/cublaslt_gemm.cu). Scales
// are swizzled for the GEMM wherever the cast did not write them so: always the weight's (row-wise in forward,
// column-wise for the input gradient), and a tensor gathered under sequence parallelism (fc1's input: forward and
// weight gradient; fc2's output gradient: input and weight gradients); each swizzle reads and writes the scales,
// 1/32 byte per element for MXFP8, 1/16 for NVFP4. NVFP4 adds one alpha kernel (no bytes) before each GEMM.
// tiny-gpt on tp 2: fc1 weight 512 x 256 per rank, input 2048 x 256; fc2 weight 256 x 512, output gradient 2048 x 256.
TEST(Precision, ScaleSwizzlesAndAlphaKernels)
{
  for (const std::string name : {"mxfp8", "nvfp4"}) {
    for (const bool sp : {true, false}) {
      auto s = dtsim::scenario::load_scenario(source_path("scenarios/tiny.yaml"),
                                              {"hardware=../hardware/dgx-b200.yaml", "training.precision=" + name,
                                               std::string("parallel.sp=") + (sp ? "true" : "false")});
      const auto plan = derive_plan(s);
      dtsim::model::Transformer t(s.model);
      const auto layer = t.layer(plan.shape);
      const bool nv = name == "nvfp4";
      const double sw = 2 * (nv ? 1.0 / 16 : 1.0 / 32);  // scale bytes per element, read and written
      const std::string at = name + (sp ? " sp" : " no sp");
      const auto* fc1_weight = find(layer, "fc1.scale_swizzle");
      const auto* fc1_weight_bwd = find(layer, "fc1.scale_swizzle.dgrad_weight", true);
      ASSERT_TRUE(fc1_weight && fc1_weight_bwd) << at;
      EXPECT_LT(rel_diff(fc1_weight->bytes, sw * 512 * 256), 1e-15) << at;
      EXPECT_LT(rel_diff(fc1_weight_bwd->bytes, sw * 512 * 256), 1e-15) << at;
      const auto* fc1_input = find(layer, "fc1.scale_swizzle.input");
      const auto* fc1_input_bwd = find(layer, "fc1.scale_swizzle.wgrad_input", true);
      const auto* fc2_grad = find(layer, "fc2.scale_swizzle.dgrad_grad", true);
      const auto* fc2_grad_w = find(layer, "fc2.scale_swizzle.wgrad_grad", true);
      if (sp) {
        ASSERT_TRUE(fc1_input && fc1_input_bwd && fc2_grad && fc2_grad_w) << at;
        EXPECT_LT(rel_diff(fc1_input->bytes, sw * 2048 * 256), 1e-15) << at;
        EXPECT_LT(rel_diff(fc1_input_bwd->bytes, sw * 2048 * 256), 1e-15) << at;
        EXPECT_LT(rel_diff(fc2_grad->bytes, sw * 2048 * 256), 1e-15) << at;
        EXPECT_LT(rel_diff(fc2_grad_w->bytes, sw * 2048 * 256), 1e-15) << at;
      } else {  // nothing gathered: the casts wrote the activations' scales swizzled (optimize_for_gemm)
        EXPECT_FALSE(fc1_input || fc1_input_bwd || fc2_grad || fc2_grad_w) << at;
      }
      // Gathered only where they are: fc1's output gradient and fc2's input are the rank's own.
      EXPECT_FALSE(find(layer, "fc1.scale_swizzle.dgrad_grad", true)) << at;
      EXPECT_FALSE(find(layer, "fc2.scale_swizzle.input")) << at;
      int alphas = 0;
      for (const auto* pass : {&layer.forward, &layer.backward})
        for (const auto& seg : *pass)
          for (const auto& op : seg.ops)
            if (op.name.find(".gemm_alpha") != std::string::npos) {
              ++alphas;
              EXPECT_EQ(op.bytes, 0.0) << at;
            }
      EXPECT_EQ(alphas, nv ? 4 * 3 : 0) << at;  // qkv, proj, fc1, fc2: three GEMMs each
    }
  }
  for (const std::string name : {"bf16", "fp8"}) {
    const auto layer = dtsim::model::Transformer(tiny_on("dgx-b200.yaml", name).model)
                           .layer(derive_plan(tiny_on("dgx-b200.yaml", name)).shape);
    EXPECT_FALSE(find(layer, "fc1.scale_swizzle")) << name;
  }
}

// A large linear GEMM runs at the precision's peak on its own curve (hardware/dgx-b200.yaml: gemm_mxfp8 max 0.67,
// half_area 2965821, p 1.5, half_k 640 at 4500; gemm_nvfp4 max 0.65, half_area 8388608, p 1.5, half_k 192 at 9000;
// bf16 gemm max 0.6995, the burst fit's 0.82 x 1237 / 1450 at sustained load, half_area 1662657, p 3, half_k 192 at
// 2250); the attention GEMMs at the bf16 peak.
TEST(Precision, GemmPeaksAndCurves)
{
  auto s = tiny_on("dgx-b200.yaml", "bf16");
  const auto& d = s.hardware.device;
  dtsim::kernels::ComputeModel bf16(d, "bf16"), mx(d, "mxfp8"), nv(d, "nvfp4");
  dtsim::model::Op big;
  big.kind = dtsim::model::Op::Kind::Gemm;
  big.linear = true;
  big.m = big.n = big.k = 16384;
  const double A = 16384.0 * 16384, k = 16384;
  auto eff = [&](double mx_, double ha, double p, double hk) {
    return mx_ * std::pow(A, p) / (std::pow(A, p) + std::pow(ha, p)) * k / (k + hk);
  };
  const double flops = 2.0 * A * k;
  EXPECT_LT(rel_diff(bf16.seconds(big), flops / (2250e12 * eff(0.6995, 1662657, 3, 192))), 1e-12);
  EXPECT_LT(rel_diff(mx.seconds(big), flops / (4500e12 * eff(0.67, 2965821, 1.5, 640))), 1e-12);
  EXPECT_LT(rel_diff(nv.seconds(big), flops / (9000e12 * eff(0.65, 8388608, 1.5, 192))), 1e-12);
  dtsim::model::Op other = big;
  other.linear = false;  // an attention or logits GEMM: 16-bit under every precision
  EXPECT_DOUBLE_EQ(mx.seconds(other), bf16.seconds(other));
  EXPECT_DOUBLE_EQ(nv.seconds(other), bf16.seconds(other));
}

// Weights: the 16-bit weights plus both block-scaled copies; saved linear inputs: the column-wise copy.
TEST(Precision, Memory)
{
  auto b = tiny_on("dgx-b200.yaml", "bf16");
  dtsim::model::Transformer t(b.model);
  const double sbh = 512.0 * 4 * 256;
  const double bf16_act = dtsim::parallel::layer_activation_bytes(b.model, derive_plan(b).shape, false);
  for (const std::string name : {"mxfp8", "nvfp4"}) {
    auto s = tiny_on("dgx-b200.yaml", name);
    const double q = precision_of(name).block_scaled_bytes;
    auto m = dtsim::parallel::estimate_memory(s, derive_plan(s), t);
    EXPECT_LT(rel_diff(m.stages[1].weights_bytes, (2.0 + 2 * q) * m.stages[1].params), 1e-15) << name;
    // Per s*b*h, tp 2 without sp: the QKV and fc1 inputs (replicated, 2 x 2 bytes), the projection input (2 x 256
    // / 256 / 2) and the fc2 input (2 x 1024 / 256 / 2) keep q bytes instead of 2.
    const double saved16 = 2 * 2 + (2.0 + 8.0) / 2;
    const double less = saved16 * (2 - q) / 2 * sbh;
    const double act = dtsim::parallel::layer_activation_bytes(s.model, derive_plan(s).shape, false);
    EXPECT_LT(rel_diff(bf16_act - act, less), 1e-12) << name;
  }
}

// Under sequence parallelism Transformer Engine 2.14.1 saves an NVFP4 input it gathers (QKV's, fc1's) with its
// row-wise copy beside the column-wise one (layernorm_linear.py drops the row-wise copy only for MXFP8): per s*b*h,
// tp 2 with sp, 2 inputs x q / tp more than the column-wise copies alone; MXFP8 keeps the column-wise copy only.
TEST(Precision, Nvfp4SavesGatheredInputsRowWiseToo)
{
  EXPECT_TRUE(precision_of("nvfp4").saves_gathered_input_rowwise);
  EXPECT_FALSE(precision_of("mxfp8").saves_gathered_input_rowwise);
  const double sbh = 512.0 * 4 * 256;
  for (const std::string name : {"mxfp8", "nvfp4"}) {
    auto s = dtsim::scenario::load_scenario(
        source_path("scenarios/tiny.yaml"),
        {"hardware=../hardware/dgx-b200.yaml", "training.precision=" + name, "parallel.sp=true"});
    auto shape = derive_plan(s).shape;
    ASSERT_TRUE(shape.sp);
    const double held = dtsim::parallel::layer_activation_bytes(s.model, shape, false);
    shape.saves_gathered_input_rowwise = false;
    const double column_wise_only = dtsim::parallel::layer_activation_bytes(s.model, shape, false);
    const double q = precision_of(name).block_scaled_bytes;
    const double more = name == "nvfp4" ? 2 * q / 2 * sbh : 0.0;
    EXPECT_NEAR(held - column_wise_only, more, 1e-9 * held) << name;
  }
}

// A device whose file gives no block-scaled peak refuses the precision, naming the key and the file.
TEST(Precision, RefusedWithoutThePeak)
{
  for (const std::string name : {"mxfp8", "nvfp4"}) {
    try {
      tiny_on("dgx-h100.yaml", name);
      ADD_FAILURE() << name << " accepted on H100";
    } catch (const dtsim::ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("device.peak_flops." + name), std::string::npos) << what;
      EXPECT_NE(what.find("dgx-h100.yaml"), std::string::npos) << what;
    }
  }
}

}  // namespace
