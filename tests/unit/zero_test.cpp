// ZeRO stages (Rajbhandari et al. 2019) on scenarios/tiny.yaml (tiny-gpt: h 256, 4 layers, vocab 1024, 512
// positions, tied embeddings; tp 2, pp 4, dp 2): memory per device, traffic per collective and optimizer work,
// each against numbers computed by hand below, and the end-to-end identity all-reduce = reduce-scatter +
// all-gather that makes ZeRO-1 cost no more communication than plain data parallelism.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kernels/compute_model.hpp"
#include "parallel/memory.hpp"
#include "replay/step_program.hpp"
#include "scenario/scenario_spec.hpp"
#include "run_json.hpp"
#include "test_paths.hpp"

using dtsim::parallel::derive_plan;

namespace {

using dtsim::replay::Step;
using dtsim::test::rel_diff;
using dtsim::test::source_path;

// By hand: a tiny-gpt layer has 12h^2 + 13h = 789,760 parameters; a tp-2 rank holds the matrices and QKV/fc1
// biases halved and the 4h norm parameters and 2h output biases whole: (789,760 - 1,536) / 2 + 1,536 = 395,648.
constexpr double kLayerPerRank = 395648;
// The first stage adds half the word embeddings (1024 * 256 / 2 = 131,072) and the positions (512 * 256).
constexpr double kEmbeddingPerRank = 131072 + 131072;
// The last stage keeps the final norm (2h = 512) and its copy of half the word embeddings (131,072).
constexpr double kHeadPerRank = 512 + 131072;

// No software stack: 16-bit gradients (a stack with fp32 main gradients doubles them; framework_memory_test.cpp).
dtsim::scenario::ScenarioSpec tiny_with_zero(int zero)
{
  return dtsim::scenario::load_scenario(source_path("scenarios/tiny.yaml"),
                                        {"parallel.zero=" + std::to_string(zero), "stack=none"});
}

TEST(ZeroMemory, StagesShardStatesGradientsAndWeights)
{
  for (int zero = 0; zero <= 3; ++zero) {
    SCOPED_TRACE("zero " + std::to_string(zero));
    auto s = tiny_with_zero(zero);
    ASSERT_EQ(s.parallel.dp, 2);
    dtsim::model::Transformer t(s.model);
    auto r = dtsim::parallel::estimate_memory(s, derive_plan(s), t);
    const auto& mid = r.stages[1];  // one layer, nothing else
    ASSERT_DOUBLE_EQ(mid.params, kLayerPerRank);
    const double P = kLayerPerRank;
    // weights 2 B, gradients 2 B, optimizer 12 B per parameter, each divided by dp = 2 from its stage on;
    // stage 3 also holds two gathered layers (the one computed and the one prefetched).
    const double weights = zero >= 3 ? 2 * P / 2 + 2 * (2 * P) : 2 * P;
    const double grads = zero >= 2 ? 2 * P / 2 : 2 * P;
    const double optim = zero >= 1 ? 12 * P / 2 : 12 * P;
    EXPECT_DOUBLE_EQ(mid.weights_bytes, weights);
    EXPECT_DOUBLE_EQ(mid.gradients_bytes, grads);
    EXPECT_DOUBLE_EQ(mid.optimizer_bytes, optim);
  }
  // The numbers themselves, for stage 2 (the hand computation above written out): 791,296 B of gradients
  // become 395,648 B; 4,747,776 B of optimizer states become 2,373,888 B.
  auto s = tiny_with_zero(2);
  dtsim::model::Transformer t(s.model);
  auto r = dtsim::parallel::estimate_memory(s, derive_plan(s), t);
  EXPECT_DOUBLE_EQ(r.stages[1].gradients_bytes, 395648.0);
  EXPECT_DOUBLE_EQ(r.stages[1].optimizer_bytes, 2373888.0);
}

std::vector<const Step*> gathers(const std::vector<Step>& steps)
{
  std::vector<const Step*> out;
  for (const auto& st : steps)
    if (st.kind == Step::Kind::ParamGather)
      out.push_back(&st);
  return out;
}

TEST(ZeroTraffic, Stage3GathersEachLayerBeforeForwardAndBackward)
{
  auto s = tiny_with_zero(3);
  dtsim::model::Transformer t(s.model);
  dtsim::kernels::ComputeModel cm(s.hardware.device, s.training.precision);
  auto prog = dtsim::replay::build_step_program(s, derive_plan(s), t, cm);
  // 16-bit parameters: bytes = 2 * parameters per TP rank.
  auto first_fw = gathers(prog.forward[0][0]);
  ASSERT_EQ(first_fw.size(), 2u);  // embedding, layer 0
  EXPECT_DOUBLE_EQ(first_fw[0]->bytes, 2 * kEmbeddingPerRank);
  EXPECT_DOUBLE_EQ(first_fw[1]->bytes, 2 * kLayerPerRank);
  auto mid_bw = gathers(prog.backward[1][0]);
  ASSERT_EQ(mid_bw.size(), 1u);
  EXPECT_DOUBLE_EQ(mid_bw[0]->bytes, 791296.0);
  auto last_fw = gathers(prog.forward[3][0]), last_bw = gathers(prog.backward[3][0]);
  ASSERT_EQ(last_fw.size(), 2u);  // layer 3, head
  ASSERT_EQ(last_bw.size(), 2u);  // head, layer 3
  EXPECT_DOUBLE_EQ(last_fw[1]->bytes, 2 * kHeadPerRank);
  EXPECT_DOUBLE_EQ(last_bw[0]->bytes, 2 * kHeadPerRank);
  // Parameters stay sharded after the optimizer: nothing to all-gather there.
  for (double b : prog.param_allgather_bytes)
    EXPECT_EQ(b, 0.0);
}

// FSDP2's reshard_after_forward=False (parallel.reshard_after_forward: false): the forward gathers as before, the
// backward gathers nothing, and the stage holds its gathered weights whole (stage 1: one layer, 2 B each) beside
// its shard, instead of the two gathered layers of ZeRO-3.
TEST(ZeroTraffic, WithoutReshardAfterForwardTheBackwardGathersNothing)
{
  auto s = dtsim::scenario::load_scenario(source_path("scenarios/tiny.yaml"),
                                          {"parallel.zero=3", "parallel.reshard_after_forward=false", "stack=none"});
  dtsim::model::Transformer t(s.model);
  dtsim::kernels::ComputeModel cm(s.hardware.device, s.training.precision);
  auto prog = dtsim::replay::build_step_program(s, derive_plan(s), t, cm);
  EXPECT_EQ(gathers(prog.forward[0][0]).size(), 2u);  // embedding, layer 0
  EXPECT_EQ(gathers(prog.forward[3][0]).size(), 2u);  // layer 3, head
  for (int64_t st = 0; st < 4; ++st)
    EXPECT_TRUE(gathers(prog.backward[size_t(st)][0]).empty()) << "stage " << st;
  auto r = dtsim::parallel::estimate_memory(s, derive_plan(s), t);
  const double P = kLayerPerRank;
  EXPECT_DOUBLE_EQ(r.stages[1].weights_bytes, 2 * P / 2 + 2 * P);
  EXPECT_DOUBLE_EQ(r.stages[1].gradients_bytes, 2 * P / 2);
}

// parallel.defer_gradient_sync (FSDP2 under torch.distributed.pipelining): gradients held whole until the last
// microbatch; refused outside ZeRO 2 and 3, as reshard_after_forward is outside ZeRO 3.
TEST(ZeroMemory, DeferredGradientSyncHoldsTheGradientsWhole)
{
  auto s = dtsim::scenario::load_scenario(source_path("scenarios/tiny.yaml"),
                                          {"parallel.zero=3", "parallel.defer_gradient_sync=true", "stack=none"});
  dtsim::model::Transformer t(s.model);
  auto r = dtsim::parallel::estimate_memory(s, derive_plan(s), t);
  EXPECT_DOUBLE_EQ(r.stages[1].gradients_bytes, 2 * kLayerPerRank);
  EXPECT_ANY_THROW(dtsim::scenario::load_scenario(source_path("scenarios/tiny.yaml"),
                                                  {"parallel.zero=1", "parallel.defer_gradient_sync=true"}));
  EXPECT_ANY_THROW(dtsim::scenario::load_scenario(source_path("scenarios/tiny.yaml"),
                                                  {"parallel.zero=2", "parallel.reshard_after_forward=false"}));
}

TEST(ZeroTraffic, Stages1And2AllGatherUpdatedParametersAfterTheOptimizer)
{
  auto s0 = tiny_with_zero(0);
  dtsim::model::Transformer t(s0.model);
  dtsim::kernels::ComputeModel cm(s0.hardware.device, s0.training.precision);
  auto p0 = dtsim::replay::build_step_program(s0, derive_plan(s0), t, cm);
  for (int zero : {1, 2}) {
    SCOPED_TRACE("zero " + std::to_string(zero));
    auto s = tiny_with_zero(zero);
    auto p = dtsim::replay::build_step_program(s, derive_plan(s), t, cm);
    EXPECT_DOUBLE_EQ(p.param_allgather_bytes[1], 2 * kLayerPerRank);
    EXPECT_DOUBLE_EQ(p.param_allgather_bytes[0], 2 * (kLayerPerRank + kEmbeddingPerRank));
    // Each rank updates half the parameters: 56 B each (kOptimizerBytesPerParam) over memory bandwidth.
    EXPECT_DOUBLE_EQ(p.optimizer_seconds[1],
                     cm.memory_seconds(dtsim::replay::kOptimizerBytesPerParam * (kLayerPerRank / 2)));
    EXPECT_TRUE(gathers(p.forward[1][0]).empty());
  }
  EXPECT_TRUE(p0.param_allgather_bytes[1] == 0.0);
  EXPECT_DOUBLE_EQ(p0.optimizer_seconds[1], cm.memory_seconds(dtsim::replay::kOptimizerBytesPerParam * kLayerPerRank));
}

// Weights held in per-tensor fp8 (training.fp8_params): Megatron-Core keeps Float8Tensor parameters in a uint8
// buffer and all-gathers it, so a layer's parameters move at one byte each; the embedding (not an fp8 parameter)
// stays 16-bit. MXFP8 weights are gathered in 16-bit (reuse_grad_buf_for_mxfp8_param_ag) and cast after. NVFP4
// weights (Megatron-Core 0.17.1's fp4_param) are gathered as their packed E2M1 row-wise data, half a byte each.
TEST(ZeroTraffic, Fp8WeightsAreGatheredInFp8)
{
  auto with = [](const std::string& precision, bool fp8_params) {
    std::vector<std::string> set = {"parallel.zero=1", "stack=none", "hardware=../hardware/dgx-b200.yaml",
                                    "training.precision=" + precision};
    if (fp8_params)
      set.push_back("training.fp8_params=true");
    auto s = dtsim::scenario::load_scenario(source_path("scenarios/tiny.yaml"), set);
    dtsim::model::Transformer t(s.model);
    dtsim::kernels::ComputeModel cm(s.hardware.device, s.training.precision);
    return dtsim::replay::build_step_program(s, derive_plan(s), t, cm);
  };
  auto fp8 = with("fp8", true), fp8_16bit = with("fp8", false), mx = with("mxfp8", true);
  auto nv = with("nvfp4", true), nv_16bit = with("nvfp4", false);
  EXPECT_DOUBLE_EQ(fp8.param_allgather_bytes[1], 1 * kLayerPerRank);
  EXPECT_DOUBLE_EQ(fp8.param_allgather_bytes[0], 1 * kLayerPerRank + 2 * kEmbeddingPerRank);
  EXPECT_DOUBLE_EQ(fp8_16bit.param_allgather_bytes[1], 2 * kLayerPerRank);
  EXPECT_DOUBLE_EQ(mx.param_allgather_bytes[1], 2 * kLayerPerRank);
  EXPECT_DOUBLE_EQ(nv.param_allgather_bytes[1], 0.5 * kLayerPerRank);
  EXPECT_DOUBLE_EQ(nv.param_allgather_bytes[0], 0.5 * kLayerPerRank + 2 * kEmbeddingPerRank);
  EXPECT_DOUBLE_EQ(nv_16bit.param_allgather_bytes[1], 2 * kLayerPerRank);
}

// ---- end to end, through the dtsim program (one SimGrid engine per process) ------------------------------

nlohmann::json run_tiny_zero(const std::string& extra) { return dtsim::test::run_json("scenarios/tiny.yaml", extra); }

// tp 8 fills a node, so each data-parallel pair spans two nodes (one ring over the NICs); without overlap the
// gradients' collective is fully exposed. A ring all-reduce moves what a reduce-scatter and an all-gather move, so
// ZeRO-1's reduce-scatter of the gradients plus its all-gather of the updated 16-bit parameters (as many bytes as
// the 16-bit gradients) take the all-reduce's bandwidth time; only NCCL's latencies differ (one all-reduce: base +
// 2 network steps, x 1.4 across nodes; a reduce-scatter and an all-gather: two bases + 1 step each), a few percent
// here. The optimizer works on half the parameters. (With 16-bit gradients, hence no stack: fp32 main gradients are
// reduced in 4 bytes and the parameters gathered in 2.)
TEST(ZeroEndToEnd, Zero1CommunicatesExactlyAsMuchAsDataParallel)
{
  if (dtsim::test::dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  const std::string plan = " --set devices=32 --set parallel.tp=8 --set parallel.pp=2 --set parallel.dp=2"
                           " --set parallel.dp_overlap=false --set stack=none"
                           " --set hardware.collectives.algorithm=ring --set hardware.collectives.protocol=simple";
  auto z0 = run_tiny_zero(plan), z1 = run_tiny_zero(plan + " --set parallel.zero=1");
  const auto &b0 = z0.at("breakdown"), &b1 = z1.at("breakdown");
  const double dp0 = b0.at("exposed_dp_comm_s").get<double>(), dp1 = b1.at("exposed_dp_comm_s").get<double>();
  std::printf("[zero] exposed DP: zero 0 %.12g s, zero 1 %.12g s; optimizer %.9g s -> %.9g s\n", dp0, dp1,
              b0.at("optimizer_s").get<double>(), b1.at("optimizer_s").get<double>());
  EXPECT_GT(dp0, 0.0);
  EXPECT_LT(rel_diff(dp1, dp0), 0.15);
  EXPECT_LT(b1.at("optimizer_s").get<double>(), 0.6 * b0.at("optimizer_s").get<double>());
}

// Folded fidelity (one device per stage) against every device simulated, for each stage, with overlap on.
TEST(ZeroEndToEnd, FoldedAndFullFidelityAgreeForEveryStage)
{
  if (dtsim::test::dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  for (int zero = 1; zero <= 3; ++zero) {
    const std::string z = " --set parallel.zero=" + std::to_string(zero);
    auto folded = run_tiny_zero(z), full = run_tiny_zero(z + " --set simulation.fidelity=full");
    const double a = folded.at("step_time_s").get<double>(), b = full.at("step_time_s").get<double>();
    std::printf("[zero %d] folded %.9g s, full %.9g s\n", zero, a, b);
    EXPECT_LT(rel_diff(a, b), 0.01) << "zero " << zero;
  }
}

// ZeRO-3 gathers parameters before every layer of every microbatch: more data-parallel traffic than ZeRO-2,
// less weight memory once a device holds more than the two gathered layers (pp 1: all four layers, dp 8).
TEST(ZeroEndToEnd, Zero3TradesTrafficForMemory)
{
  if (dtsim::test::dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  const std::string plan = " --set parallel.pp=1 --set parallel.dp=8 --set parallel.dp_overlap=false";
  auto z2 = run_tiny_zero(plan + " --set parallel.zero=2");
  auto z3 = run_tiny_zero(plan + " --set parallel.zero=3");
  EXPECT_GT(z3.at("breakdown").at("exposed_dp_comm_s").get<double>(),
            z2.at("breakdown").at("exposed_dp_comm_s").get<double>());
  const auto &m2 = z2.at("memory").at("stages").at(0), &m3 = z3.at("memory").at("stages").at(0);
  EXPECT_LT(m3.at("weights_bytes").get<double>(), m2.at("weights_bytes").get<double>());
}

// Deferring the gradient sync to the last microbatch (16 microbatches of tiny.yaml) and keeping the parameters
// gathered from forward to backward cut ZeRO-3's data-parallel traffic: the exposed time shrinks, dp not overlapped.
TEST(ZeroEndToEnd, Fsdp2UnderPipeliningCommunicatesLess)
{
  if (dtsim::test::dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  const std::string plan = " --set parallel.zero=3 --set parallel.dp_overlap=false";
  auto base = run_tiny_zero(plan);
  auto fsdp2 =
      run_tiny_zero(plan + " --set parallel.reshard_after_forward=false --set parallel.defer_gradient_sync=true");
  EXPECT_LT(fsdp2.at("breakdown").at("exposed_dp_comm_s").get<double>(),
            base.at("breakdown").at("exposed_dp_comm_s").get<double>());
  EXPECT_LT(fsdp2.at("step_time_s").get<double>(), base.at("step_time_s").get<double>());
}

// parallel.param_gather_overlap: ZeRO-1's all-gather of updated parameters moves from after the optimizer (fully
// exposed) to the start of the next step, where each layer's forward waits only for its own parameters. One stage,
// dp 2 across nodes: the exposed data-parallel time and the step shrink; folded and full fidelity agree.
TEST(ZeroEndToEnd, ParamGatherOverlapHidesTheRefresh)
{
  if (dtsim::test::dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  const std::string plan = " --set devices=16 --set parallel.tp=8 --set parallel.pp=1 --set parallel.dp=2"
                           " --set parallel.zero=1";
  auto off = run_tiny_zero(plan), on = run_tiny_zero(plan + " --set parallel.param_gather_overlap=true");
  auto full = run_tiny_zero(plan + " --set parallel.param_gather_overlap=true --set simulation.fidelity=full");
  const double dp_off = off.at("breakdown").at("exposed_dp_comm_s").get<double>();
  const double dp_on = on.at("breakdown").at("exposed_dp_comm_s").get<double>();
  std::printf("[zero] param gather overlap: exposed DP %.6g -> %.6g s, step %.9g -> %.9g s\n", dp_off, dp_on,
              off.at("step_time_s").get<double>(), on.at("step_time_s").get<double>());
  EXPECT_LT(dp_on, dp_off);
  EXPECT_LT(on.at("step_time_s").get<double>(), off.at("step_time_s").get<double>());
  // to SimGrid's rounding of the protocol-scaled flow sizes
  EXPECT_LT(rel_diff(on.at("step_time_s").get<double>(), full.at("step_time_s").get<double>()), 1e-6);
}

}  // namespace
