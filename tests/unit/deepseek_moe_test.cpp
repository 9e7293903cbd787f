// DeepSeek-V3-class mixture of experts: Hugging Face config.json files of deepseek_v2/v3, qwen2_moe and qwen3_moe
// read as they are; parameter counts against the published ones; multi-head latent attention and node-limited
// routing against hand computations on small cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <vector>

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
  using dtsim::model::expert_inter_node_scale;
  ModelSpec m;
  m.experts = 32;
  m.experts_per_token = 8;
  m.expert_groups = 4;
  m.groups_per_token = 2;
  EXPECT_EQ(dtsim::model::node_limited_nodes(m, 4), 2);
  // Megatron-Core's alltoall sends every copy on its own: k (N - 1) / N cross whatever the routing, scale 1.
  EXPECT_DOUBLE_EQ(expert_inter_node_scale(m, 4, false), 1.0);
  // Once per node, 4 nodes with a group each: the token reaches both picked nodes, 2 x 3 / 4 = 1.5 crossings of
  // the 6 copies' worth: 0.25.
  EXPECT_DOUBLE_EQ(expert_inter_node_scale(m, 4, true), 0.25);
  // 8 nodes, each group over 2: the 8 copies uniform over the 4 nodes of the 2 picked groups:
  // 7 x (4 / 8) x (1 - (3 / 4)^8) crossings of 7.
  EXPECT_NEAR(expert_inter_node_scale(m, 8, true), 0.5 * (1 - std::pow(0.75, 8)), 1e-12);
  // 2 nodes, two groups each: the other node is missed only when both picked groups are on this one, 1 in
  // C(4, 2) = 6: 5 / 6 crossings of 8 x 1 / 2.
  EXPECT_NEAR(expert_inter_node_scale(m, 2, true), (5.0 / 6) / 4, 1e-12);
  // No groups (Mixtral): (N - 1) (1 - (1 - 1 / N)^k) of k (N - 1) / N: 0.45 at N = 4, k = 8.
  m.expert_groups = 0;
  EXPECT_NEAR(expert_inter_node_scale(m, 4, true), (1 - std::pow(0.75, 8)) / 2, 1e-12);
  EXPECT_NEAR(expert_inter_node_scale(m, 4, true), 0.44994, 1e-5);
  // One node: nothing crosses, nothing scaled.
  EXPECT_DOUBLE_EQ(expert_inter_node_scale(m, 1, true), 1.0);

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

// Once-per-node crossings against brute-force enumeration, for small node counts N and experts per token k:
// without groups, every placement of the k copies on the N nodes (N^k, equally likely) and every own node; with
// groups filling whole nodes, every set of picked groups (each receiving a copy); with groups spanning several
// nodes, every set of picked groups and every placement of the copies on their nodes. Never above either bound:
// the reach M (N - 1) / N and the copies k (N - 1) / N.
double distinct_others(const std::vector<int64_t>& nodes_hit, int64_t own)
{
  std::vector<int64_t> seen;
  for (int64_t n : nodes_hit)
    if (n != own && std::find(seen.begin(), seen.end(), n) == seen.end())
      seen.push_back(n);
  return double(seen.size());
}

// Every placement of k copies on the given nodes: the mean of distinct nodes other than `own`.
double mean_over_placements(const std::vector<int64_t>& reach, int64_t k, int64_t own)
{
  double sum = 0, count = 0;
  std::vector<int64_t> index(size_t(k), 0);
  for (;;) {
    std::vector<int64_t> hit;
    for (int64_t i : index)
      hit.push_back(reach[size_t(i)]);
    sum += distinct_others(hit, own);
    ++count;
    size_t d = 0;
    while (d < index.size() && ++index[d] == int64_t(reach.size()))
      index[d++] = 0;
    if (d == index.size())
      break;
  }
  return sum / count;
}

// Every subset of `pick` of `g` groups.
std::vector<std::vector<int64_t>> subsets(int64_t g, int64_t pick)
{
  std::vector<std::vector<int64_t>> out;
  for (int64_t mask = 0; mask < (int64_t(1) << g); ++mask)
    if (__builtin_popcountll(uint64_t(mask)) == pick) {
      std::vector<int64_t> set;
      for (int64_t i = 0; i < g; ++i)
        if ((mask >> i) & 1)
          set.push_back(i);
      out.push_back(set);
    }
  return out;
}

// Node-limited routing with groups, each case {g groups, N nodes, `pick` groups per token, k experts per token}:
// once_per_node_crossings against the mean over every set of picked groups and every own node of
// `distinct_other_nodes(g, N, k, set, own)`, the distinct nodes other than `own` that the token's copies reach; and
// never above the reach M (N - 1) / N nor the copies k (N - 1) / N.
void expect_crossings_match_enumeration(
    const std::vector<std::array<int64_t, 4>>& cases,
    const std::function<double(int64_t g, int64_t n, int64_t k, const std::vector<int64_t>& set, int64_t own)>&
        distinct_other_nodes)
{
  for (const auto [g, n, pick, k] : cases) {
    ModelSpec m;
    m.experts_per_token = k;
    m.expert_groups = g;
    m.groups_per_token = pick;
    double sum = 0, count = 0;
    for (const auto& set : subsets(g, pick))
      for (int64_t own = 0; own < n; ++own) {
        sum += distinct_other_nodes(g, n, k, set, own);
        ++count;
      }
    const double crossings = dtsim::model::once_per_node_crossings(m, n);
    EXPECT_NEAR(crossings, sum / count, 1e-12) << "g " << g << " N " << n;
    EXPECT_LE(crossings, double(dtsim::model::node_limited_nodes(m, n)) * double(n - 1) / double(n) + 1e-12);
    EXPECT_LE(crossings, double(k) * double(n - 1) / double(n) + 1e-12);
  }
}

TEST(NodeLimitedRouting, OncePerNodeMatchesEnumeration)
{
  for (int64_t n = 2; n <= 4; ++n)
    for (int64_t k = 1; k <= 6; ++k) {
      ModelSpec m;
      m.experts_per_token = k;
      std::vector<int64_t> all(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i)
        all[size_t(i)] = i;
      double sum = 0;
      for (int64_t own = 0; own < n; ++own)
        sum += mean_over_placements(all, k, own);
      const double crossings = dtsim::model::once_per_node_crossings(m, n);
      EXPECT_NEAR(crossings, sum / double(n), 1e-12) << "N " << n << " k " << k;
      EXPECT_LE(crossings, double(k) * double(n - 1) / double(n) + 1e-12);
    }
  // Groups filling whole nodes: g groups, g / N per node, `pick` of them each receiving a copy.
  expect_crossings_match_enumeration(
      {{8, 4, 4, 8}, {8, 8, 4, 8}, {8, 2, 3, 4}, {6, 3, 2, 2}, {4, 4, 2, 8}, {8, 4, 2, 3}},
      [](int64_t g, int64_t n, int64_t, const std::vector<int64_t>& set, int64_t own) {
        std::vector<int64_t> hit;
        for (int64_t grp : set)
          hit.push_back(grp / (g / n));
        return distinct_others(hit, own);
      });
  // Groups spanning N / g nodes each: the copies uniform over the nodes of the picked groups.
  expect_crossings_match_enumeration(
      {{2, 4, 1, 3}, {2, 6, 1, 4}, {3, 6, 2, 3}},
      [](int64_t g, int64_t n, int64_t k, const std::vector<int64_t>& set, int64_t own) {
        std::vector<int64_t> reach;
        for (int64_t grp : set)
          for (int64_t i = 0; i < n / g; ++i)
            reach.push_back(grp * (n / g) + i);
        return mean_over_placements(reach, k, own);
      });
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
