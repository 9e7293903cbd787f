// Wafer-scale systems (Cerebras CS-2 with MemoryX and SwarmX): the per-unit program against the transformer
// FLOP formulas (Narayanan et al. 2021), the weight-streaming step against hand timelines in the compute-bound
// and the streaming-bound regimes, scaling over systems through SwarmX, what-if sensitivities, the memory checks
// of both execution modes, and auto mode.
//
// Every expected number is computed here from the model shape and the hardware quantities, never copied from
// the program's output. SimGrid allows one engine per process and gtest_discover_tests runs each TEST in its own
// process, so each TEST below runs at most ONE in-process simulation; comparisons between several simulations
// run the dtsim binary (DTSIM_BINARY) in child processes.
//
// Test data (tests/unit/data/wafer/): small-model.yaml (a synthetic 4-layer GPT, h 1024), small-cs2.yaml (it on
// one CS-2, weight streaming, one pass of 64 x 1024 tokens, no recomputation) on cs2-constant-gemm.yaml (the CS-2
// file with GEMMs at a shape-independent 0.1677 of peak), and copies of it with ONE quantity changed each (cs2-*.yaml).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/simulate.hpp"
#include "model/transformer.hpp"
#include "report/run_report.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"
#include "systems/cerebras_wafer/wafer_hardware.hpp"
#include "systems/cerebras_wafer/wafer_run.hpp"
#include "systems/cerebras_wafer/wafer_program.hpp"

using dtsim::parallel::derive_plan;

namespace {

using dtsim::test::rel_diff;
using dtsim::test::source_path;
using dtsim::test::dtsim_binary;
using dtsim::test::run_capture;
using dtsim::test::CommandResult;
using dtsim::scenario::WaferMode;

const std::string kDir = "tests/unit/data/wafer/";
const std::string kSmall = kDir + "small-cs2.yaml";
const std::string kNeox = "scenarios/wafer/gpt-neox-20b-cs2.yaml";

// The small model's shape (tests/unit/data/wafer/small-model.yaml) and the small scenario's batch.
constexpr double kHidden = 1024, kFfn = 4096, kVocab = 8192, kHeads = 16, kLayers = 4;
constexpr double kMicroBatch = 64, kSequence = 1024, kE = 2;  // micro batch, sequence, bytes per fp16 element

std::string hw(const std::string& variant) { return "hardware=" + source_path(kDir + variant); }

dtsim::scenario::ScenarioSpec load_wafer_scenario(const std::string& rel,
                                                  const std::vector<std::string>& overrides = {})
{
  return dtsim::scenario::load_scenario(source_path(rel), overrides);
}

// ---- hand formulas -------------------------------------------------------------------------------------------

// Parameters of one GPT layer: QKV 3h^2 + 3h, projection h^2 + h, MLP 2*h*f + f + h, two layer norms 4h;
// with f = 4h: 12h^2 + 13h.
double layer_params() { return 12 * kHidden * kHidden + 13 * kHidden; }
// Forward GEMM FLOPs of one layer for b sequences of s tokens (Narayanan 2021): 24*b*s*h^2 + 4*b*s^2*h.
double layer_fwd_flops(double b)
{
  return 24 * b * kSequence * kHidden * kHidden + 4 * b * kSequence * kSequence * kHidden;
}
// Token table V*h plus the learned position table s*h (positions = seq_len = max_positions here).
double embedding_params() { return kVocab * kHidden + kSequence * kHidden; }
// Final layer norm 2h; the output matrix is the token table again (tied), which streams in with the head.
double head_params() { return 2 * kHidden + kVocab * kHidden; }

// Bytes the memory-bound (elementwise) kernels of one layer move, 2-byte activations, 1-byte dropout masks.
// S = b*heads*s^2 attention scores, T = b*s tokens.
//  forward:  softmax reads+writes the scores (2eS), attention dropout reads, writes and a mask ((2e+1)S);
//            two layer norms (2eTh each), two bias-dropout-adds ((3e+1)Th each), bias+GELU (2eTf)
//  backward: softmax 3eS, dropout (2e+1)S, layer norms 3eTh each, bias-dropout-adds (2e+1)Th each, GELU 3eTf
double layer_fwd_mem_bytes(double b)
{
  const double S = b * kHeads * kSequence * kSequence, T = b * kSequence;
  return (2 * kE + 2 * kE + 1) * S + (2 * 2 * kE + 2 * (3 * kE + 1)) * T * kHidden + 2 * kE * T * kFfn;
}
double layer_bwd_mem_bytes(double b)
{
  const double S = b * kHeads * kSequence * kSequence, T = b * kSequence;
  return (3 * kE + 2 * kE + 1) * S + (2 * 3 * kE + 2 * (2 * kE + 1)) * T * kHidden + 3 * kE * T * kFfn;
}

// Activation exchange between units: the b*s*h activations are laid out by row of tiles; each of the `rows` rows
// sends (cols-1)/cols of its share end to end along its (cols-1) east links. One link carries the tile edge's
// share of the fabric: fabric/(4*cores) per core port times sqrt(cores per tile) cores along an edge.
double exchange_s(const dtsim::systems::WaferSpec& w, double b)
{
  const double rows = w.mesh_rows, cols = w.mesh_cols;
  const double link = w.fabric_bw_Bps / (4.0 * double(w.cores)) * std::sqrt(double(w.cores) / (rows * cols));
  const double per_row = b * kSequence * kHidden * kE / rows * (cols - 1) / cols;
  return per_row / link + (cols - 1) * w.hop_latency_s;
}

// ---- running the binary ---------------------------------------------------------------------------------------

// Runs `dtsim run <scenario> --format json --set ...`; `with_stderr` folds stderr into the captured output.
CommandResult run_dtsim(const std::string& scenario_rel, const std::vector<std::string>& sets, bool with_stderr = false)
{
  std::string cmd = "'" + dtsim_binary() + "' run '" + source_path(scenario_rel) + "' --format json";
  for (const auto& s : sets)
    cmd += " --set '" + s + "'";
  cmd += with_stderr ? " 2>&1" : "";
  return run_capture(cmd);
}

// Step time of a run that must succeed.
double step_of(const std::string& scenario_rel, const std::vector<std::string>& sets)
{
  CommandResult r = run_dtsim(scenario_rel, sets);
  EXPECT_EQ(r.rc, 0) << scenario_rel << " with " << ::testing::PrintToString(sets);
  if (r.rc != 0)
    return NAN;
  return nlohmann::json::parse(r.out).at("step_time_s").get<double>();
}

#define SKIP_WITHOUT_BINARY()                                  \
  if (dtsim_binary().empty())                                  \
  GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable"

// ---- 0. the hardware file ------------------------------------------------------------------------------------

// hardware/cerebras-cs2.yaml in SI units: bits/s / 8 = bytes/s; decimal prefixes.
TEST(WaferHardware, Cs2FileInSiUnits)
{
  auto s = load_wafer_scenario(kSmall);
  const auto& h = s.hardware;
  ASSERT_EQ(h.kind, "cerebras-wafer");
  EXPECT_DOUBLE_EQ(h.peak_flops("fp16"), 7.5e15);
  // the test copy: shape-independent GEMMs
  EXPECT_DOUBLE_EQ(dtsim::systems::wafer_hardware(h).wafer.gemm_max_efficiency, 0.1677);
  EXPECT_DOUBLE_EQ(dtsim::systems::wafer_hardware(h).wafer.gemm_half_length, 0.0);
  EXPECT_DOUBLE_EQ(dtsim::systems::wafer_hardware(h).wafer.sram_bytes, 40e9);
  EXPECT_DOUBLE_EQ(dtsim::systems::wafer_hardware(h).wafer.sram_bw_Bps, 20e15);
  EXPECT_DOUBLE_EQ(dtsim::systems::wafer_hardware(h).wafer.fabric_bw_Bps, 220e15 / 8);
  EXPECT_EQ(dtsim::systems::wafer_hardware(h).wafer.cores, 850000);
  EXPECT_EQ(dtsim::systems::wafer_hardware(h).wafer.mesh_rows, 8);
  EXPECT_EQ(dtsim::systems::wafer_hardware(h).wafer.mesh_cols, 8);
  EXPECT_DOUBLE_EQ(dtsim::systems::wafer_hardware(h).wafer.hop_latency_s, 100e-9);
  EXPECT_DOUBLE_EQ(dtsim::systems::wafer_hardware(h).wafer.io_bw_Bps, 1.2e12 / 8);
  EXPECT_DOUBLE_EQ(dtsim::systems::wafer_hardware(h).wafer.io_latency_s, 2e-6);
  EXPECT_DOUBLE_EQ(dtsim::systems::wafer_hardware(h).memoryx.capacity_bytes, 12e12);
  EXPECT_DOUBLE_EQ(dtsim::systems::wafer_hardware(h).memoryx.bandwidth_Bps, 1.2e12 / 8);
  EXPECT_DOUBLE_EQ(dtsim::systems::wafer_hardware(h).memoryx.update_bandwidth_Bps, 400e9);
  EXPECT_DOUBLE_EQ(dtsim::systems::wafer_hardware(h).swarmx.port_bw_Bps, 1.2e12 / 8);
  EXPECT_EQ(dtsim::systems::wafer_hardware(h).swarmx.fan_out, 16);
  // Each variant changes one quantity only.
  EXPECT_DOUBLE_EQ(
      dtsim::systems::wafer_hardware(load_wafer_scenario(kSmall, {hw("cs2-io-10gbps.yaml")}).hardware).wafer.io_bw_Bps,
      10e9 / 8);
  EXPECT_DOUBLE_EQ(dtsim::systems::wafer_hardware(load_wafer_scenario(kSmall, {hw("cs2-swarmx-1gbps.yaml")}).hardware)
                       .swarmx.port_bw_Bps,
                   1e9 / 8);
  EXPECT_DOUBLE_EQ(dtsim::systems::wafer_hardware(load_wafer_scenario(kSmall, {hw("cs2-fabric-220tbps.yaml")}).hardware)
                       .wafer.fabric_bw_Bps,
                   220e12 / 8);
}

// ---- 1. the per-unit program ----------------------------------------------------------------------------------

// One layer on the whole wafer, one pass of b = 64 sequences of 1024 tokens, recompute none:
//   fwd FLOPs  = 24*b*s*h^2 + 4*b*s^2*h                         (all GEMMs)
//   fwd_s      = fwd FLOPs / (peak 7.5 PFLOP/s * efficiency 0.1677) + elementwise bytes / SRAM bandwidth
//   bwd FLOPs  = 2 * fwd FLOPs (input and weight gradients),   weight_bytes = 2 B * (12h^2 + 13h)
TEST(WaferProgram, SmallGptUnitsByHand)
{
  auto s = load_wafer_scenario(kSmall);
  dtsim::model::Transformer t(s.model);
  auto p = dtsim::wafer::build_wafer_program(s, derive_plan(s), t);
  ASSERT_EQ(p.units.size(), size_t(kLayers) + 2);  // embedding, 4 layers, head
  EXPECT_EQ(p.passes, 1);
  EXPECT_EQ(p.pass_batch, int64_t(kMicroBatch));

  const double rate =
      s.hardware.peak_flops("fp16") * dtsim::systems::wafer_hardware(s.hardware).wafer.gemm_max_efficiency;
  const double sram = dtsim::systems::wafer_hardware(s.hardware).wafer.sram_bw_Bps;
  const double flops = layer_fwd_flops(kMicroBatch);
  const double gemm_f = flops / rate, mem_f = layer_fwd_mem_bytes(kMicroBatch) / sram,
               mem_b = layer_bwd_mem_bytes(kMicroBatch) / sram;
  for (int l = 1; l <= int(kLayers); ++l) {
    const auto& u = p.units[size_t(l)];
    SCOPED_TRACE(u.label);
    EXPECT_DOUBLE_EQ(u.params, layer_params());
    EXPECT_DOUBLE_EQ(u.weight_bytes, 2 * layer_params());
    EXPECT_LT(rel_diff(u.fwd_flops, flops), 1e-12);
    EXPECT_LT(rel_diff(u.bwd_flops, 2 * flops), 1e-12);
    EXPECT_EQ(u.recompute_s, 0.0);
    EXPECT_EQ(u.recompute_flops, 0.0);
    // Time: GEMMs at the calibrated rate plus a small memory term (about 0.04% here).
    EXPECT_GT(u.fwd_s, gemm_f);
    EXPECT_LT(u.fwd_s - gemm_f, 1e-3 * u.fwd_s) << "the memory term is not small";
    EXPECT_LT(rel_diff(u.fwd_s - gemm_f, mem_f), 0.01) << "memory term " << u.fwd_s - gemm_f << " s, hand " << mem_f;
    EXPECT_LT(rel_diff(u.fwd_s, gemm_f + mem_f), 1e-6);
    EXPECT_GT(u.bwd_s, 2 * gemm_f);
    EXPECT_LT(rel_diff(u.bwd_s, 2 * gemm_f + mem_b), 1e-6);
    EXPECT_DOUBLE_EQ(u.out_bytes, kMicroBatch * kSequence * kHidden * kE);  // the b*s*h activations handed on
    EXPECT_EQ(u.offloaded_input_bytes, 0.0);          // recompute none: every activation stays on the wafer
  }
  const auto& emb = p.units.front();
  EXPECT_DOUBLE_EQ(emb.params, embedding_params());
  EXPECT_DOUBLE_EQ(emb.weight_bytes, 2 * embedding_params());
  EXPECT_EQ(emb.fwd_flops, 0.0);  // a lookup: no GEMM
  const auto& head = p.units.back();
  EXPECT_DOUBLE_EQ(head.weight_bytes, 2 * head_params());
  EXPECT_LT(rel_diff(head.fwd_flops, 2 * kMicroBatch * kSequence * kHidden * kVocab), 1e-12);  // logits 2*b*s*h*V
  EXPECT_LT(rel_diff(head.bwd_flops, 4 * kMicroBatch * kSequence * kHidden * kVocab), 1e-12);
  EXPECT_EQ(head.out_bytes, 0.0);  // the loss: nothing handed on
  // Model FLOPs of the step: 3 x (layers' forward + logits), one pass.
  EXPECT_LT(rel_diff(p.model_flops, 3 * (kLayers * flops + 2 * kMicroBatch * kSequence * kHidden * kVocab)), 1e-12);
  EXPECT_DOUBLE_EQ(p.hardware_flops, p.model_flops);  // nothing recomputed
  EXPECT_DOUBLE_EQ(p.optimizer_bytes_per_param, 28.0);
  std::printf("[wafer program] layer: %.6g FLOPs, fwd %.6g s (GEMM %.6g s + memory %.3g s), bwd %.6g s, "
              "weights %.6g B\n",
              flops, p.units[1].fwd_s, gemm_f, p.units[1].fwd_s - gemm_f, p.units[1].bwd_s, p.units[1].weight_bytes);
}

// Full recomputation under weight streaming: each layer's input (its checkpoint, b*s*h 16-bit values) is held off
// the wafer, written out in the forward and read back for the backward; the embedding and the head keep nothing.
TEST(WaferProgram, LayerInputsOffTheWaferUnderFullRecompute)
{
  auto s = load_wafer_scenario(kSmall, {"training.recompute=full"});
  dtsim::model::Transformer t(s.model);
  auto p = dtsim::wafer::build_wafer_program(s, derive_plan(s), t);
  ASSERT_EQ(p.units.size(), size_t(kLayers) + 2);
  for (int l = 1; l <= int(kLayers); ++l)
    EXPECT_DOUBLE_EQ(p.units[size_t(l)].offloaded_input_bytes, kMicroBatch * kSequence * kHidden * kE)
        << p.units[size_t(l)].label;
  EXPECT_EQ(p.units.front().offloaded_input_bytes, 0.0);
  EXPECT_EQ(p.units.back().offloaded_input_bytes, 0.0);
}

// ---- 2. weight streaming against hand timelines --------------------------------------------------------------

// Compute-bound (default CS-2): each unit's weights (<= 25 MB, ~170 us over 1.2 Tb/s) arrive long before the
// unit before has finished computing (>= 0.87 ms), so the wafer never waits except at the start and the end:
//   step = startup + sum over units (fwd_s + bwd_s) + exposed activation exchanges + tail
//   startup   = load(embedding) + load(layer 0): the embedding's lookup is far shorter than layer 0's load,
//               load(u) = weight_bytes(u) / I/O bandwidth + I/O latency + one hop per row
//   exchanges = one after each layer's forward and each of layers L-1..1's backward (the embedding's forward
//               exchange hides under layer 0's load, layer 0's backward one under the tail; the head has none)
//   tail      = layer 0's backward ends; its gradients and the embedding's (whose backward is a few us) leave
//               through the same ports back to back, and MemoryX applies both Adam updates one after the other:
//               (w_L0 + w_emb) / I/O bandwidth + (p_L0 + p_emb) * 28 B / update bandwidth
TEST(WaferStreaming, ComputeBoundStepByHand)
{
  auto s = load_wafer_scenario(kSmall);
  auto r = dtsim::app::simulate(s, false);
  ASSERT_TRUE(r.simulated) << r.why_not_fitting;
  const auto& w = dtsim::systems::wafer_hardware(s.hardware).wafer;
  const double rate = s.hardware.peak_flops("fp16") * w.gemm_max_efficiency, sram = w.sram_bw_Bps;
  const double io = w.io_bw_Bps, lat = w.io_latency_s + w.mesh_rows * w.hop_latency_s;
  auto load_s = [&](double params) { return 2 * params / io + lat; };

  const double layer_f = layer_fwd_flops(kMicroBatch) / rate + layer_fwd_mem_bytes(kMicroBatch) / sram;
  const double layer_b = 2 * layer_fwd_flops(kMicroBatch) / rate + layer_bwd_mem_bytes(kMicroBatch) / sram;
  const double head_fb =
      3 * 2 * kMicroBatch * kSequence * kHidden * kVocab / rate;  // logits fwd + bwd (cross entropy: ~1 us, left out)
  const double compute = kLayers * (layer_f + layer_b) + head_fb;
  const double startup = load_s(embedding_params()) + load_s(layer_params());
  const double exchanges = (2 * kLayers - 1) * exchange_s(w, kMicroBatch);
  const double upd = dtsim::systems::wafer_hardware(s.hardware).memoryx.update_bandwidth_Bps;
  const double tail = 2 * (layer_params() + embedding_params()) / io +
                      (layer_params() + embedding_params()) * 28 / upd;
  const double hand = startup + compute + exchanges + tail;
  const double step = r.replay.step_time_s;
  std::printf("[compute-bound] step %.6g s; hand %.6g s = startup %.4g + compute %.6g + exchanges %.4g + tail %.4g "
              "(%.2f%% off)\n",
              step, hand, startup, compute, exchanges, tail, 100 * (step / hand - 1));
  EXPECT_LT(rel_diff(step, hand), 0.02);
  // The breakdown is a partition of the step; compute is the sum of the units' times.
  const auto& b = r.replay.average;
  EXPECT_LT(rel_diff(b.compute_s, compute), 1e-3);
  const double sum = b.compute_s + b.exposed_dp_comm_s + b.optimizer_s + b.exposed_weight_streaming_s +
                     b.exposed_fabric_s + b.bubble_s + b.exposed_pp_comm_s + b.exposed_tp_comm_s;
  EXPECT_LT(rel_diff(sum, step), 1e-9);
}

// Streaming-bound (I/O cut to 10 Gb/s, MemoryX and SwarmX unchanged): each load (13-20 ms) is much longer than
// any unit's compute (<= 3 ms), so the loads run back to back:
//   T_in = bytes streamed in / I/O bandwidth (+ latency per load), bytes = 2 B x (embedding + L layers + head
//          forward, the head kept for its backward, then L layers + embedding backward)
//   then the gradients still to leave: the ports' outward direction is busy from the end of layer 0's backward
//   (bwd_L0 after its load arrived, i.e. T_in - load(emb) + bwd_L0) until layer 0's and the embedding's
//   gradients are out, and MemoryX then updates the embedding:
//   step = T_in + bwd_L0 + w_L0 / I/O + p_emb * 28 B / update bandwidth
//   exposed weight streaming = T_in - (compute + exchanges of every work that runs before the last load lands)
TEST(WaferStreaming, StreamingBoundStepByHand)
{
  auto s = load_wafer_scenario(kSmall, {hw("cs2-io-10gbps.yaml")});
  ASSERT_DOUBLE_EQ(dtsim::systems::wafer_hardware(s.hardware).memoryx.bandwidth_Bps, 1.2e12 / 8);  // unchanged
  ASSERT_DOUBLE_EQ(dtsim::systems::wafer_hardware(s.hardware).swarmx.port_bw_Bps, 1.2e12 / 8);     // unchanged
  auto r = dtsim::app::simulate(s, false);
  ASSERT_TRUE(r.simulated) << r.why_not_fitting;
  const auto& w = dtsim::systems::wafer_hardware(s.hardware).wafer;
  const double rate = s.hardware.peak_flops("fp16") * w.gemm_max_efficiency, sram = w.sram_bw_Bps;
  const double io = w.io_bw_Bps, lat = w.io_latency_s + w.mesh_rows * w.hop_latency_s;
  const double streamed = 2 * (2 * embedding_params() + 2 * kLayers * layer_params() + head_params());
  const double loads = 2 * kLayers + 3;
  const double t_in = streamed / io + loads * lat;
  const double layer_f = layer_fwd_flops(kMicroBatch) / rate + layer_fwd_mem_bytes(kMicroBatch) / sram;
  const double layer_b = 2 * layer_fwd_flops(kMicroBatch) / rate + layer_bwd_mem_bytes(kMicroBatch) / sram;
  const double upd = dtsim::systems::wafer_hardware(s.hardware).memoryx.update_bandwidth_Bps;
  const double hand = t_in + layer_b + 2 * layer_params() / io + embedding_params() * 28 / upd;
  const double step = r.replay.step_time_s;
  const double exposed = r.replay.average.exposed_weight_streaming_s;
  const double compute = kLayers * (layer_f + layer_b) + 3 * 2 * kMicroBatch * kSequence * kHidden * kVocab / rate;
  const double hand_exposed = t_in - compute - (2 * kLayers + 1) * exchange_s(w, kMicroBatch);
  std::printf("[streaming-bound] step %.6g s; hand %.6g s (%.2f%% off); streamed/I-O %.6g s = %.1f%% of the step; "
              "exposed weight streaming %.6g s (%.1f%% of the step, hand %.6g s)\n",
              step, hand, 100 * (step / hand - 1), streamed / io, 100 * streamed / io / step, exposed,
              100 * exposed / step, hand_exposed);
  EXPECT_LT(rel_diff(step, hand), 0.02);
  // The weights streamed in are most of the step, and the step is never shorter than streaming them.
  EXPECT_GE(step, streamed / io);
  EXPECT_GT(streamed / io / step, 0.85);
  // The report says so: waiting for weights is most of the step.
  EXPECT_GT(exposed, 0.5 * step);
  EXPECT_LT(rel_diff(exposed, hand_exposed), 0.02);
}

// ---- 3. more systems, same global batch ----------------------------------------------------------------------

// Global batch 128 split over N = 1, 2, 4 systems, one pass each (micro batch 128/N): each system computes 1/N
// of the batch while the weights stream once per pass through SwarmX whatever N. Compute-bound (default CS-2):
// the step shrinks with N. With 1 Gb/s SwarmX ports every system (one system too: its link to MemoryX is a
// SwarmX port) waits ~2 s for weights whatever N, so the gain from 1 to 4 systems nearly vanishes.
TEST(WaferSystems, MoreSystemsShortenStepAsFarAsSwarmXAllows)
{
  SKIP_WITHOUT_BINARY();
  auto plan = [](int n) {
    return std::vector<std::string>{"devices=" + std::to_string(n), "parallel.dp=" + std::to_string(n),
                                    "training.global_batch=128", "training.micro_batch=" + std::to_string(128 / n)};
  };
  auto with = [](std::vector<std::string> v, const std::string& extra) {
    v.push_back(extra);
    return v;
  };
  const double s1 = step_of(kSmall, plan(1)), s2 = step_of(kSmall, plan(2)), s4 = step_of(kSmall, plan(4));
  const std::string slow = hw("cs2-swarmx-1gbps.yaml");
  const double slow1 = step_of(kSmall, with(plan(1), slow)), slow4 = step_of(kSmall, with(plan(4), slow));
  const double gain = s1 / s4, slow_gain = slow1 / slow4;
  std::printf("[systems] default: 1 -> %.6g s, 2 -> %.6g s, 4 -> %.6g s (gain 1->4 %.3fx); SwarmX 1 Gb/s: 1 -> %.6g s, "
              "4 -> %.6g s (gain %.3fx)\n",
              s1, s2, s4, gain, slow1, slow4, slow_gain);
  EXPECT_LT(s2, s1);
  EXPECT_LT(s4, s2);
  // Compute-bound: 4 systems do a quarter of the work each; streaming, startup and tail do not shrink.
  EXPECT_GT(gain, 2.5);
  // Streaming-bound through SwarmX: the gain is much smaller (or a loss).
  EXPECT_LT(slow_gain - 1, 0.25 * (gain - 1));
  // And each system waits for the same weights: a slow tree costs about (bytes streamed) / port bandwidth.
  const double streamed = 2 * (2 * embedding_params() + 2 * kLayers * layer_params() + head_params());
  EXPECT_GT(slow4, streamed / (1e9 / 8));
}

// ---- 4. what-ifs -----------------------------------------------------------------------------------------------

// Weights and gradients cross the wafer's I/O ports and, with one system, the link to MemoryX: cutting either to
// 10 Gb/s makes the step streaming-bound, ~256 MB / 1.25 GB/s = 0.2 s against 23 ms (> 5x). Halving MemoryX's
// bandwidth on the compute-bound case leaves loads hidden under compute: only startup and tail grow (up or equal,
// well under 5%).
TEST(WaferWhatIf, SlowerMemoryXOrIoRaisesStep)
{
  SKIP_WITHOUT_BINARY();
  const double base = step_of(kSmall, {});
  const double io = step_of(kSmall, {hw("cs2-io-10gbps.yaml")});
  const double mx = step_of(kSmall, {hw("cs2-memoryx-10gbps.yaml")});
  const double mx_half = step_of(kSmall, {hw("cs2-memoryx-600gbps.yaml")});
  std::printf("[what-if] base %.6g s; I/O 10 Gb/s %.6g s (%.2fx); MemoryX 10 Gb/s %.6g s (%.2fx); MemoryX 600 Gb/s "
              "%.6g s (%+.2f%%)\n",
              base, io, io / base, mx, mx / base, mx_half, 100 * (mx_half / base - 1));
  const double streamed = 2 * (2 * embedding_params() + 2 * kLayers * layer_params() + head_params());
  EXPECT_GT(io, 5 * base);
  EXPECT_GT(mx, 5 * base);
  EXPECT_GT(io, streamed / (10e9 / 8));
  EXPECT_GT(mx, streamed / (10e9 / 8));
  EXPECT_GE(mx_half, base * (1 - 1e-9));
  EXPECT_LT(mx_half, 1.05 * base);
}

// Layer inputs off the wafer (full recomputation) at 10 Gb/s of I/O: each of the 4 inputs (64 x 1024 x 1024 x
// 2 B = 134 MB, 107 ms at 1.25 GB/s) leaves during the forward and comes back before its backward, over the
// ports that carry the weights. The wafer holds two inputs (the one computing, the one moving), so the reads run
// one after another once the last write is out: the step is at least 2 x L x input / I/O, and at most that plus
// every weight and gradient byte over the I/O, the compute (forward, recomputation, backward) and the update.
// With the inputs kept on the wafer (recompute none) the same I/O gives a far shorter step.
TEST(WaferStreaming, LayerInputsCrossTheIo)
{
  SKIP_WITHOUT_BINARY();
  CommandResult r = run_dtsim(kSmall, {"training.recompute=full", hw("cs2-io-10gbps.yaml")});
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  const double step = j.at("step_time_s").get<double>();
  const double exposed = j.at("breakdown").at("exposed_weight_streaming_s").get<double>();
  const double kept = step_of(kSmall, {hw("cs2-io-10gbps.yaml")});
  const double io = 10e9 / 8, input = kMicroBatch * kSequence * kHidden * kE;
  const double streamed = 2 * (2 * embedding_params() + 2 * kLayers * layer_params() + head_params());
  const double grads = 2 * (embedding_params() + kLayers * layer_params() + head_params());
  const double rate = 7.5e15 * 0.1677;  // cs2-constant-gemm.yaml
  const double compute =
      4 * kLayers * layer_fwd_flops(kMicroBatch) / rate + 3 * 2 * kMicroBatch * kSequence * kHidden * kVocab / rate;
  const double upd = (embedding_params() + kLayers * layer_params() + head_params()) * 28 / 400e9;
  const double lower = 2 * kLayers * input / io;
  const double upper = lower + (streamed + grads) / io + compute + upd;
  std::printf("[layer inputs] step %.6g s in [%.6g, %.6g]; exposed off-wafer streaming %.6g s; inputs kept on the "
              "wafer %.6g s\n",
              step, lower, upper, exposed, kept);
  EXPECT_GE(step, lower);
  EXPECT_LE(step, upper);
  EXPECT_GT(exposed, 0.5 * step);    // the wafer waits for its inputs most of the step
  EXPECT_GT(step, kept + 0.5 * lower);
}

// The kernel switch (wafer.kernel_switch, 1 ms here) is added to each unit's forward and each unit's backward:
// 6 units (embedding, 4 layers, head) x 2 directions x 1 pass = 12 ms more of the wafer's time on a compute-bound
// step. Two things come off it: the embedding's backward now runs while layer 0's gradients stream out and
// MemoryX updates layer 0 (0.17 + 0.88 ms, so at most its 1 ms is hidden), and layer 0's load (0.17 ms), which
// the step used to wait for after the embedding's lookup, now lands during the embedding's longer forward.
TEST(WaferStreaming, KernelSwitchPerUnitAndDirection)
{
  SKIP_WITHOUT_BINARY();
  const double base = step_of(kSmall, {});
  const double with_switch = step_of(kSmall, {hw("cs2-kernel-switch-1ms.yaml")});
  const double io = 1.2e12 / 8, load_l0 = 2 * layer_params() / io;
  std::printf("[kernel switch] %.6g s -> %.6g s (+%.4g ms)\n", base, with_switch, 1e3 * (with_switch - base));
  const double kernels = (kLayers + 2) * 2 * 1e-3;
  EXPECT_LE(with_switch - base, kernels + 1e-9);
  EXPECT_GE(with_switch - base, kernels - 1e-3 - load_l0 - 1e-5);
}

// Fabric 1000x lower: each exchange of the 128 MiB of activations takes ~16 ms instead of ~16 us, ten of them
// against ~23 ms of compute: the step grows several times. Fabric 10x higher on the compute-bound case: the
// exchanges (~0.6% of the step) shrink tenfold; the step moves by less than 1%.
TEST(WaferWhatIf, FabricBandwidth)
{
  SKIP_WITHOUT_BINARY();
  auto s = load_wafer_scenario(kSmall);
  const double base = step_of(kSmall, {});
  const double slow = step_of(kSmall, {hw("cs2-fabric-220tbps.yaml")});
  const double fast = step_of(kSmall, {hw("cs2-fabric-2200pbps.yaml")});
  dtsim::systems::WaferSpec slow_w = dtsim::systems::wafer_hardware(s.hardware).wafer;
  slow_w.fabric_bw_Bps /= 1000;
  const double x_slow = exchange_s(slow_w, kMicroBatch);
  std::printf("[what-if] base %.6g s; fabric /1000 %.6g s (%.2fx; one exchange %.4g s by hand); fabric x10 %.6g s "
              "(%+.3f%%)\n",
              base, slow, slow / base, x_slow, fast, 100 * (fast / base - 1));
  EXPECT_GT(slow, 2 * base);
  EXPECT_GT(slow, base + (2 * kLayers - 1) *
                             (x_slow - exchange_s(dtsim::systems::wafer_hardware(s.hardware).wafer, kMicroBatch)) *
                             0.98);
  EXPECT_LT(rel_diff(fast, base), 0.01);
  EXPECT_LE(fast, base * (1 + 1e-9));
}

// ---- 5. models that do not fit --------------------------------------------------------------------------------

// Layer-pipelined keeps the whole training state on the wafer: 16 B per parameter (16-bit weights and
// gradients, fp32 master weights and Adam moments) x 20.55e9 parameters = 329 GB, far above 40 GB of SRAM.
TEST(WaferFit, LayerPipelinedRefusesGptNeox20b)
{
  auto s = load_wafer_scenario(kNeox, {"wafer.mode=layer-pipelined"});
  auto r = dtsim::app::simulate(s, false);  // refused before any simulation
  EXPECT_FALSE(r.simulated);
  EXPECT_FALSE(r.fits());
  const double params = 20554567680.0;  // Hugging Face model card of EleutherAI/gpt-neox-20b
  EXPECT_DOUBLE_EQ(r.total_params, params);
  EXPECT_DOUBLE_EQ(dtsim::systems::wafer_run(r).memory.sram_weights, 16 * params);
  EXPECT_GT(16 * params, dtsim::systems::wafer_hardware(s.hardware).wafer.sram_bytes);
  EXPECT_NE(r.why_not_fitting.find("SRAM"), std::string::npos) << r.why_not_fitting;
  std::printf("[fit] layer-pipelined gpt-neox-20b: %s\n", r.why_not_fitting.c_str());
}

// A model whose only problem is MemoryX: a synthetic deep model, 500 layers of h = 12288 (12h^2 + 13h =
// 1.812e9 parameters each, ~906e9 in all): weights, gradients and Adam states 16 B/param = 14.5 TB > 12 TB, while
// three layers' 16-bit weights (10.9 GB) and the activations (micro batch 1, 512 tokens, full recompute) fit.
TEST(WaferFit, WeightStreamingReportsMemoryXOnly)
{
  auto s = load_wafer_scenario(kNeox, {"model=" + source_path(kDir + "deep-model.yaml"), "wafer.mode=weight-streaming",
                                       "training.micro_batch=1", "training.global_batch=16", "training.seq_len=512"});
  dtsim::model::Transformer t(s.model);
  auto m = dtsim::wafer::wafer_memory(s, derive_plan(s), t, WaferMode::WeightStreaming);
  const double h = 12288, params = 500 * (12 * h * h + 13 * h) + 50432 * h + 512 * h + 2 * h;
  EXPECT_LT(rel_diff(t.total_params(512), params), 1e-12);
  EXPECT_DOUBLE_EQ(m.memoryx_total(), 16 * t.total_params(512));
  EXPECT_FALSE(m.fits());
  EXPECT_LE(m.sram_total(), m.sram_capacity);
  const std::string why = m.why_not();
  EXPECT_NE(why.find("MemoryX"), std::string::npos) << why;
  EXPECT_EQ(why.find("SRAM"), std::string::npos) << why;
}

// The binary exits with 3 ("does not fit") for both refusals. Megatron 1T in weight streaming:
// 16 B x 1.008e12 = 16.1 TB of MemoryX state against 12 TB.
TEST(WaferFit, BinaryExitsThreeWhenTheModelDoesNotFit)
{
  SKIP_WITHOUT_BINARY();
  CommandResult lp = run_dtsim(kNeox, {"wafer.mode=layer-pipelined"}, true);
  EXPECT_EQ(lp.rc, 3) << lp.out;
  EXPECT_NE(lp.out.find("SRAM"), std::string::npos);
  CommandResult big = run_dtsim(
      kNeox, {"model=" + source_path("models/megatron/megatron-1t.yaml"), "wafer.mode=weight-streaming"}, true);
  EXPECT_EQ(big.rc, 3) << big.out;
  EXPECT_NE(big.out.find("MemoryX needs"), std::string::npos) << big.out;
  EXPECT_GT(16 * 1.008e12, 12e12);
}

// ---- 6. auto mode ---------------------------------------------------------------------------------------------

// GPT-NeoX 20B: layer-pipelined cannot fit (329 GB of SRAM needed), so auto must pick weight streaming and say
// why; the step is then simulated.
TEST(WaferAuto, PicksWeightStreamingForGptNeox20b)
{
  auto s = load_wafer_scenario(kNeox);
  ASSERT_EQ(s.wafer_mode, WaferMode::Auto);
  auto r = dtsim::app::simulate(s, false);
  const auto& w = dtsim::systems::wafer_run(r);
  EXPECT_EQ(w.mode, WaferMode::WeightStreaming);
  EXPECT_FALSE(w.mode_reason.empty());
  EXPECT_NE(w.mode_reason.find("layer-pipelined"), std::string::npos) << w.mode_reason;
  EXPECT_TRUE(r.fits());
  ASSERT_TRUE(r.simulated);
  EXPECT_GT(r.replay.step_time_s, 0.0);
  std::printf("[auto] gpt-neox-20b: %s, step %.6g s (%s)\n", dtsim::scenario::to_string(w.mode),
              r.replay.step_time_s, w.mode_reason.c_str());
}

// The small model fits both ways (layer-pipelined: 16 B x 60M parameters = 1 GB of SRAM): auto simulates both
// and keeps the faster; its step equals the faster of the two modes run explicitly.
TEST(WaferAuto, PicksTheFasterModeWhenBothFit)
{
  SKIP_WITHOUT_BINARY();
  CommandResult a = run_dtsim(kSmall, {"wafer.mode=auto"});
  ASSERT_EQ(a.rc, 0);
  auto j = nlohmann::json::parse(a.out);
  const double ws = step_of(kSmall, {"wafer.mode=weight-streaming"});
  const double lp = step_of(kSmall, {"wafer.mode=layer-pipelined"});
  const std::string mode = j.at("wafer").at("mode").get<std::string>();
  const std::string reason = j.at("wafer").at("mode_reason").get<std::string>();
  std::printf("[auto] small: weight-streaming %.6g s, layer-pipelined %.6g s; auto chose %s (%s)\n", ws, lp,
              mode.c_str(), reason.c_str());
  EXPECT_FALSE(reason.empty());
  EXPECT_EQ(mode, ws <= lp ? "weight-streaming" : "layer-pipelined");
  EXPECT_LT(rel_diff(j.at("step_time_s").get<double>(), std::min(ws, lp)), 1e-9);
}

// ---- 7. GPT-NeoX 20B in weight streaming on one CS-2 ----------------------------------------------------------

// MemoryX holds 16-bit weights (2 B), 16-bit gradients (2 B) and fp32 master weights and Adam moments (12 B):
// 16 B x 20,554,567,680 = 329 GB of 12 TB. The wafer holds three layers' 16-bit weights
// (3 x 2 B x (12h^2 + 13h), h = 6144: 2.7 GB) plus activations.
TEST(WaferMemory, GptNeox20bFitsOneCs2InWeightStreaming)
{
  auto s = load_wafer_scenario(kNeox);
  dtsim::model::Transformer t(s.model);
  auto m = dtsim::wafer::wafer_memory(s, derive_plan(s), t, WaferMode::WeightStreaming);
  const double h = 6144, params = 20554567680.0;
  EXPECT_DOUBLE_EQ(t.total_params(2048), params);
  EXPECT_TRUE(m.fits()) << m.why_not();
  EXPECT_TRUE(m.why_not().empty());
  EXPECT_DOUBLE_EQ(m.memoryx_total(), 16 * params);
  EXPECT_DOUBLE_EQ(m.memoryx_weights, 2 * params);
  EXPECT_DOUBLE_EQ(m.memoryx_capacity, 12e12);
  EXPECT_DOUBLE_EQ(m.sram_weights, 3 * 2 * (12 * h * h + 13 * h));
  EXPECT_LE(m.sram_total(), 40e9);
  std::printf("[memory] gpt-neox-20b weight streaming: MemoryX %.4g B of %.4g B, SRAM %.4g B of %.4g B\n",
              m.memoryx_total(), m.memoryx_capacity, m.sram_total(), m.sram_capacity);
}

}  // namespace
