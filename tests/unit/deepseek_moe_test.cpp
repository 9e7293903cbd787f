// DeepSeek-V3-class mixture of experts: Hugging Face config.json files of deepseek_v2/v3, qwen2_moe and qwen3_moe
// read as they are; parameter counts against the published ones; multi-head latent attention and node-limited
// routing against hand computations on small cases.
#include <gtest/gtest.h>

#include "parallel/collective.hpp"
#include "core/diagnostics.hpp"
#include "model/mla.hpp"
#include "model/model_yaml.hpp"
#include "model/node_limited_routing.hpp"
#include "model/transformer.hpp"
#include "parallel/memory.hpp"
#include "parallel/plan.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::model::ModelSpec;
using dtsim::model::Transformer;
using dtsim::test::source_path;

ModelSpec load_model_spec(const std::string& relative)
{
  dtsim::Diagnostics diag;
  ModelSpec m = dtsim::model::load_model(source_path(relative), diag);
  EXPECT_TRUE(diag.empty()) << relative;
  return m;
}

// DeepSeek-V3 (arXiv 2412.19437, abstract: "671B total parameters with 37B activated for each token"). The main
// model is counted; the multi-token-prediction module (num_nextn_predict_layers 1; Hugging Face's 685B = 671B +
// 14B, the repository README) is not. By hand: MLA 187,105,280 + 2,048 latent-norm weights per layer; dense MLP
// 3 * 7168 * 18432; expert 3 * 7168 * 2048, 256 routed + 1 shared, router 7168 * 256; two RMSNorms per layer;
// 3 dense + 58 MoE layers; untied embedding and output 129,280 * 7168 each; final norm.
TEST(DeepSeekV3, ParameterCounts)
{
  const ModelSpec m = load_model_spec("models/deepseek-v3-671b/config.json");
  EXPECT_EQ(m.experts, 256);
  EXPECT_EQ(m.expert_width(), 2048);
  EXPECT_EQ(m.shared_ffn, 2048);
  EXPECT_EQ(m.dense_layers, 3);
  EXPECT_EQ(m.mla.q_lora_rank, 1536);
  EXPECT_EQ(m.mla.qk_head_dim(), 192);
  const Transformer t(m);
  EXPECT_DOUBLE_EQ(t.total_params(4096), 671026404352.0);
  EXPECT_NEAR(t.total_params(4096) / 671e9, 1.0, 0.01);
  // Active: every parameter but the 248 routed experts a token skips, embeddings included: 37.55B, 1.5% above
  // the published "37B" (36.63B without the input embedding, a lookup: 1.0% below). The report gives no breakdown.
  EXPECT_DOUBLE_EQ(t.active_params(4096), 37552282624.0);
  EXPECT_NEAR(t.active_params(4096) / 37e9, 1.0, 0.02);
}

// Qwen3-235B-A22B ("235B total, 22B activated", Qwen3 model card): the config.json and the YAML model agree.
TEST(Qwen3Moe, ParameterCounts)
{
  for (const std::string file : {"models/qwen3-235b-a22b/config.json", "models/qwen3-235b-a22b.yaml"}) {
    const Transformer t(load_model_spec(file));
    EXPECT_DOUBLE_EQ(t.total_params(4096), 235093610496.0) << file;
    EXPECT_NEAR(t.total_params(4096) / 235e9, 1.0, 0.01) << file;
    EXPECT_NEAR(t.active_params(4096) / 22e9, 1.0, 0.01) << file;
  }
}

// Qwen1.5-MoE-A2.7B ("14.3B parameters in total", Qwen blog 2024-03-28): 60 experts of 1408, a shared expert of
// 5632 with its h x 1 gate, every layer a MoE layer.
TEST(Qwen2Moe, ConfigAccepted)
{
  const ModelSpec m = load_model_spec("tests/unit/data/hf/Qwen1.5-MoE-A2.7B/config.json");
  EXPECT_EQ(m.experts, 60);
  EXPECT_EQ(m.experts_per_token, 4);
  EXPECT_EQ(m.expert_width(), 1408);
  EXPECT_EQ(m.shared_ffn, 5632);
  EXPECT_TRUE(m.shared_expert_gate);
  EXPECT_EQ(m.dense_layers, 0);
  EXPECT_NEAR(Transformer(m).total_params(8192) / 14.3e9, 1.0, 0.01);
}

// DeepSeek-V2-Lite ("15.7B total parameters", arXiv 2405.04434, Appendix B): no query latent (q_lora_rank null).
TEST(DeepSeekV2, LiteConfigAccepted)
{
  const ModelSpec m = load_model_spec("tests/unit/data/hf/DeepSeek-V2-Lite/config.json");
  EXPECT_EQ(m.mla.q_lora_rank, 0);
  EXPECT_EQ(m.mla.kv_lora_rank, 512);
  EXPECT_EQ(m.shared_ffn, 2 * 1408);
  EXPECT_NEAR(Transformer(m).total_params(4096) / 15.7e9, 1.0, 0.01);
}

// MLA on h 16, 2 heads, q_lora 8, kv_lora 4, nope 2, rope 1, v 3. Matrices: q_a 16*8 = 128, kv_a 16*(4+1) = 80,
// q_b 8*2*3 = 48, kv_b 4*2*(2+3) = 40, o 2*3*16 = 96: 392, plus the latent norms 8 + 4. Forward FLOPs for 5 tokens
// of a 5-token sequence: 2*5*392 = 3920, scores 2*5*5*2*3 = 300, values 2*5*5*2*3 = 300: 4520.
TEST(Mla, FlopsAndParametersByHand)
{
  dtsim::model::MlaSpec a;
  a.q_lora_rank = 8;
  a.kv_lora_rank = 4;
  a.qk_nope_head_dim = 2;
  a.qk_rope_head_dim = 1;
  a.v_head_dim = 3;
  EXPECT_DOUBLE_EQ(dtsim::model::mla_params(a, 16, 2), 404.0);
  // tp 2: the down-projections and norms whole (128 + 80 + 8 + 4), the rest halved ((48 + 40 + 96) / 2).
  EXPECT_DOUBLE_EQ(dtsim::model::mla_params_per_rank(a, 16, 2, 2), 312.0);
  EXPECT_DOUBLE_EQ(dtsim::model::mla_forward_flops(a, 16, 2, 5, 5), 4520.0);

  // The layer's kernels add up to the same FLOPs (with a gated MLP of 32: 2*5*3*16*32 = 15360).
  ModelSpec m;
  m.family = dtsim::model::Family::GatedDecoder;
  m.hidden = 16;
  m.heads = m.kv_heads = 2;
  m.head_dim = 8;
  m.ffn = 32;
  m.vocab = 64;
  m.max_positions = 64;
  m.learned_positions = false;
  m.mla = a;
  const Transformer t(m);
  dtsim::model::Shape sh;
  sh.seq = 5;
  double flops = 0;
  for (const auto& seg : t.layer(sh).forward)
    for (const auto& op : seg.ops)
      flops += op.flops();
  EXPECT_DOUBLE_EQ(flops, 4520.0 + 15360.0);
  EXPECT_DOUBLE_EQ(t.layer_forward_flops(5, 5), 4520.0 + 15360.0);
}

// Node-limited routing: 32 experts in 4 groups, 8 per token, each token's experts in at most 2 groups.
TEST(NodeLimitedRouting, InterNodeShareByHand)
{
  ModelSpec m;
  m.experts = 32;
  m.experts_per_token = 8;
  m.expert_groups = 4;
  m.groups_per_token = 2;
  // 4 nodes, a group per node: at most 2 nodes, so 2 of 8 copies' worth cross: 0.25.
  EXPECT_EQ(dtsim::model::node_limited_nodes(m, 4), 2);
  EXPECT_DOUBLE_EQ(dtsim::model::node_limited_inter_node_scale(m, 4), 0.25);
  // 8 nodes, each group over 2 nodes: at most 4 nodes: 0.5.
  EXPECT_DOUBLE_EQ(dtsim::model::node_limited_inter_node_scale(m, 8), 0.5);
  // 2 nodes, two groups per node: a token may reach both nodes, no bound.
  EXPECT_DOUBLE_EQ(dtsim::model::node_limited_inter_node_scale(m, 2), 1.0);
  // No groups (Mixtral): no bound.
  m.expert_groups = 0;
  EXPECT_DOUBLE_EQ(dtsim::model::node_limited_inter_node_scale(m, 4), 1.0);

  // The all-to-all of 400 bytes per rank over 4 ranks on 2 nodes (2 per node): 100 bytes per pair; at a scale of
  // 0.25 the 8 inter-node flows carry 25 bytes each (200 bytes in all instead of 800), the 4 intra-node flows 100.
  dtsim::parallel::Placement placement(4, 1, 1, 2);
  const auto phases = dtsim::collectives::plan_collective(dtsim::collectives::Kind::AllToAll, 400, {0, 1, 2, 3},
                                                          placement, dtsim::collectives::Fabric{}, 0.25);
  ASSERT_EQ(phases.size(), 1u);
  double inter = 0, intra = 0;
  for (const auto& f : phases[0].flows)
    (placement.domain_of(f.src) != placement.domain_of(f.dst) ? inter : intra) += f.bytes;
  EXPECT_DOUBLE_EQ(inter, 200.0);
  EXPECT_DOUBLE_EQ(intra, 400.0);
}

// The shipped scenario: stage 0 holds three dense layers and one MoE layer, stage 1 four MoE layers; no TP, EP 64.
TEST(DeepSeekV3, StageParametersWithDenseFirstLayers)
{
  const auto s = dtsim::scenario::load_scenario(source_path("scenarios/examples/deepseek-v3-h800x2048.yaml"), {});
  const Transformer t(s.model);
  const auto plan = dtsim::parallel::derive_plan(s);
  EXPECT_EQ(plan.stage_dense_layers(0, s.model), 3);
  EXPECT_EQ(plan.stage_dense_layers(1, s.model), 0);
  const double dense = t.layer_params_per_rank(1, 64, true), moe = t.layer_params_per_rank(1, 64);
  EXPECT_DOUBLE_EQ(dense, 187107328.0 + 3.0 * 7168 * 18432 + 2 * 7168);
  // 4 of the 256 routed experts, the shared expert and the router on every rank.
  EXPECT_DOUBLE_EQ(moe, 187107328.0 + 5.0 * 3 * 7168 * 2048 + 7168.0 * 256 + 2 * 7168);
  EXPECT_DOUBLE_EQ(dtsim::parallel::stage_params(t, plan, 0), 3 * dense + moe + 129280.0 * 7168);
  EXPECT_DOUBLE_EQ(dtsim::parallel::stage_params(t, plan, 1), 4 * moe);
  EXPECT_DOUBLE_EQ(dtsim::parallel::stage_expert_params(t, plan, 0), 4.0 * 3 * 7168 * 2048);
}

}  // namespace
