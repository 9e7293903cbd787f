// Context parallelism as PyTorch's experimental _attention runs it under torch.compile (stack key
// kernels.context_parallel: torch-allgather, torchtitan), against hand computations on scenarios/tiny.yaml (tiny-gpt:
// h 256, 8 heads of 32, sequence 512, micro batch 4), and against Megatron-LM's ring on the same plan.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/diagnostics.hpp"
#include "model/transformer.hpp"
#include "run_json.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::model::Op;
using dtsim::model::Segment;
using dtsim::model::TpCollective;
using dtsim::test::rel_diff;
using dtsim::test::source_path;

dtsim::model::Shape cp2_shape(bool allgather)
{
  dtsim::model::Shape shape{4, 512, 1, false, 2, 1, 1.0, 2, true};
  shape.cp_allgather = allgather;
  return shape;
}

dtsim::model::Transformer tiny_context_parallel_model()
{
  return dtsim::model::Transformer(
      dtsim::scenario::load_scenario(source_path("scenarios/tiny.yaml"), {"devices=32", "parallel.cp=2"}).model);
}

// The attention's work (FLOPs, halved for causal kernels) over a pass.
double attention_work(const std::vector<Segment>& pass)
{
  double w = 0;
  for (const auto& seg : pass)
    for (const Op& op : seg.ops)
      if (op.fused != Op::Fused::None)
        w += op.flops() * (op.causal ? 0.5 : 1.0);
  return w;
}

double memory_bytes(const std::vector<Segment>& pass, const std::string& name)
{
  double bytes = 0;
  for (const auto& seg : pass)
    for (const Op& op : seg.ops)
      if (op.name == name)
        bytes += op.bytes;
  return bytes;
}

// Where the blocking gathers sit: -1 before the first attention kernel, +1 after the last, 0 between them.
std::vector<std::pair<int, double>> blocking_gathers(const std::vector<Segment>& pass)
{
  auto attention = [](const Segment& seg) {
    for (const Op& op : seg.ops)
      if (op.fused != Op::Fused::None)
        return true;
    return false;
  };
  size_t first = pass.size(), last = 0;
  for (size_t i = 0; i < pass.size(); ++i)
    if (attention(pass[i])) {
      first = std::min(first, i);
      last = i;
    }
  std::vector<std::pair<int, double>> out;
  for (size_t i = 0; i < pass.size(); ++i)
    if (pass[i].is_collective() && pass[i].blocking) {
      EXPECT_EQ(pass[i].collective, TpCollective::ContextGather);
      out.push_back({i < first ? -1 : i > last ? 1 : 0, pass[i].collective_bytes});
    }
  return out;
}

// One causal kernel over the rank's own block and (cp - 1) later blocks, not causal: the same work as the ring's
// one causal kernel over every key, forward and backward.
TEST(TorchContextParallel, TheBlocksDoTheRingsAttentionWork)
{
  const auto t = tiny_context_parallel_model();
  const auto ring = t.layer(cp2_shape(false)), torch = t.layer(cp2_shape(true));
  EXPECT_GT(attention_work(ring.forward), 0);
  EXPECT_LT(rel_diff(attention_work(torch.forward), attention_work(ring.forward)), 1e-12);
  EXPECT_LT(rel_diff(attention_work(torch.backward), attention_work(ring.backward)), 1e-12);
  int causal = 0, blocks = 0;
  for (const auto& seg : torch.forward)
    for (const Op& op : seg.ops)
      if (op.fused == Op::Fused::AttentionForward && op.name.find("_scores") != std::string::npos) {
        ++blocks;
        causal += op.causal;
        // Its own block at the rank's 256 queries; the later ones at 256 queries x 128 keys or 128 x 256.
        EXPECT_DOUBLE_EQ(op.m * op.n, op.causal ? 256.0 * 256 : 256.0 * 128);
        EXPECT_DOUBLE_EQ(op.attn_seq, op.m);
      }
  EXPECT_EQ(blocks, 3);
  EXPECT_EQ(causal, 1);
}

// Forward: every rank's K, V (repeated to the 8 heads) gathered before the attention, waited for; backward: gathered
// again before the blocks' backward, and the fp32 dK, dV passed on after each of the cp blocks.
TEST(TorchContextParallel, GathersAndRotationsAreBlockingWithTheirBytes)
{
  const auto t = tiny_context_parallel_model();
  const auto torch = t.layer(cp2_shape(true));
  const double kv = 4.0 * 256 * 2 * 8 * 32;  // the rank's K and V elements
  const auto fwd = blocking_gathers(torch.forward), bwd = blocking_gathers(torch.backward);
  ASSERT_EQ(fwd.size(), 1u);
  EXPECT_EQ(fwd[0].first, -1);
  EXPECT_DOUBLE_EQ(fwd[0].second, 2.0 * 2 * kv);  // bf16, both ranks' share
  ASSERT_EQ(bwd.size(), 2u);
  EXPECT_EQ(bwd[0].first, -1);
  EXPECT_DOUBLE_EQ(bwd[0].second, 2.0 * 2 * kv);
  EXPECT_EQ(bwd[1].first, 1);
  // cp = 2 transfers of 4-byte dK, dV per rank: a ring all-gather over 2 ranks moves half its tensor.
  EXPECT_DOUBLE_EQ(bwd[1].second / 2, 2 * 4 * kv);
  // The ring's forward overlaps: nothing in it blocks.
  for (const auto& seg : t.layer(cp2_shape(false)).forward)
    EXPECT_FALSE(seg.blocking);
  // One merge (cp - 1) of 9.5 bytes per output element; backward, the fp32 accumulations of dQ, dK, dV.
  const double out = 4.0 * 256 * 8 * 32;
  EXPECT_DOUBLE_EQ(memory_bytes(torch.forward, "cp_merge"), 9.5 * out);
  EXPECT_DOUBLE_EQ(memory_bytes(torch.backward, "cp_merge.bwd"), (6 + 9.5) * (out + kv) + 6 * kv);
}

// With the tokens per rank fixed (256 of each sequence), every doubling of cp adds to a rank the same work per added
// K, V block, as PyTorch's loops do (docs/validation.md, "The 8B context-parallel rows read again", rests on it):
// attention work cp times the single rank's, one merge and one dK, dV transfer per later block, a gather that moves
// the other ranks' K, V. Nothing in the model may grow faster than the number of blocks.
TEST(TorchContextParallel, AtFixedTokensPerRankEachAddedBlockCostsTheSame)
{
  const auto t = tiny_context_parallel_model();
  auto shape = [](int64_t cp) {
    dtsim::model::Shape s{4, 256 * cp, 1, false, 2, 1, 1.0, cp, true};
    s.cp_allgather = true;
    return s;
  };
  const auto one = t.layer(shape(1));
  const double kv = 4.0 * 256 * 2 * 8 * 32, out = 4.0 * 256 * 8 * 32;  // the rank's K, V and output elements
  for (int64_t cp : {2, 4, 8}) {
    SCOPED_TRACE(cp);
    const auto layer = t.layer(shape(cp));
    const double c = double(cp);
    EXPECT_LT(rel_diff(attention_work(layer.forward), c * attention_work(one.forward)), 1e-12);
    EXPECT_LT(rel_diff(attention_work(layer.backward), c * attention_work(one.backward)), 1e-12);
    EXPECT_DOUBLE_EQ(memory_bytes(layer.forward, "cp_merge"), (c - 1) * 9.5 * out);
    const auto fwd = blocking_gathers(layer.forward), bwd = blocking_gathers(layer.backward);
    ASSERT_EQ(fwd.size(), 1u);
    ASSERT_EQ(bwd.size(), 2u);
    // What a rank receives: a ring all-gather over cp ranks moves (cp - 1) / cp of its tensor.
    EXPECT_DOUBLE_EQ(fwd[0].second * (c - 1) / c, 2 * (c - 1) * kv);  // the other ranks' bf16 K, V
    EXPECT_DOUBLE_EQ(bwd[1].second * (c - 1) / c, 4 * c * kv);       // cp fp32 dK, dV transfers
  }
}

nlohmann::json run_with_stack(const std::string& stack, const std::string& extra = "")
{
  return dtsim::test::run_json("scenarios/tiny.yaml", " --set devices=32 --set parallel.cp=2 --set stack=" +
                                                          source_path("tests/unit/data/" + stack) + extra);
}

// The replay waits for every gather: exposed context-parallel time, and a longer step than the ring's; folded and
// full fidelity agree.
TEST(TorchContextParallel, TheStepWaitsForItsGathers)
{
  if (dtsim::test::dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  const auto ring = run_with_stack("stack-ring-cp.yaml"), torch = run_with_stack("stack-torch-cp.yaml");
  const auto full = run_with_stack("stack-torch-cp.yaml", " --set simulation.fidelity=full");
  const double r = ring.at("step_time_s").get<double>(), a = torch.at("step_time_s").get<double>();
  const double exposed = torch.at("breakdown").at("exposed_cp_comm_s").get<double>();
  std::printf("[torch cp] ring %.6g s, all-gather %.6g s (exposed %.6g s), full fidelity %.6g s\n", r, a, exposed,
              full.at("step_time_s").get<double>());
  EXPECT_GT(exposed, 0);
  EXPECT_GT(a, r);
  EXPECT_LT(rel_diff(a, full.at("step_time_s").get<double>()), 0.01);
}

// PyTorch's context parallelism dispatches only the fused SDPA kernels: unfused attention is an input error.
TEST(TorchContextParallel, UnfusedAttentionIsAnInputError)
{
  EXPECT_THROW(dtsim::scenario::load_scenario(source_path("scenarios/tiny.yaml"),
                                              {"devices=32", "parallel.cp=2", "training.flash_attention=false",
                                               "stack=" + source_path("tests/unit/data/stack-torch-cp.yaml")}),
               dtsim::ConfigError);
}

}  // namespace
