// `dtsim explain` prints each collective of a layer at the time the simulation's own rule gives its group
// (sim/report/explain.cpp): NCCL's predicted time with the switch tiers' latency (collectives::collective_time, which
// the replay's flows take alone: tests/unit/collective_test.cpp), and the expert all-to-all's closed form with
// node-limited routing's scale (collectives::expert_all_to_all_time, which the search's bound uses), here checked
// against the flows the replay lays. Three groups: a tensor-parallel all-reduce inside a node, a tensor-parallel
// reduce-scatter across two nodes (NICs and switch tiers), and DeepSeek-V3's expert all-to-all over 8 nodes, where
// node-limited routing halves the bytes between nodes. A hand-built twin in explain that drifts from the rule fails
// here: the first row of each collective in the layer's forward must print the rule's microseconds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <sstream>
#include <string>

#include "app/load.hpp"
#include "model/transformer.hpp"
#include "parallel/all_to_all.hpp"
#include "parallel/collective.hpp"
#include "parallel/plan.hpp"
#include "report/explain.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::test::source_path;
namespace collectives = dtsim::collectives;
namespace model = dtsim::model;

struct Explained {
  dtsim::scenario::ScenarioSpec s;
  dtsim::parallel::DerivedPlan plan;
  std::string text;
};

Explained explain(const std::string& scenario, const std::vector<std::string>& overrides)
{
  Explained e{dtsim::app::load_for_simulation(source_path(scenario), overrides), {}, {}};
  e.plan = dtsim::parallel::derive_plan(e.s);
  std::ostringstream out;
  dtsim::report::print_explain(out, e.s, e.plan);
  e.text = out.str();
  return e;
}

// The first collective `c` of the layer's forward: its bytes (the whole tensor, as explain prints them).
double first_forward_bytes(const Explained& e, model::TpCollective c)
{
  const model::Transformer t(e.s.model);
  for (const auto& seg : t.layer(e.plan.shape).forward)
    if (seg.is_collective() && seg.collective == c)
      return seg.collective_bytes;
  ADD_FAILURE() << "no " << model::to_string(c) << " in the layer's forward";
  return 0;
}

// The microseconds explain prints on the first row of `c` under "layer forward" with the group label `label`.
std::string printed_us(const Explained& e, model::TpCollective c, const std::string& label)
{
  std::istringstream in(e.text.substr(e.text.find("layer forward")));
  const std::string name = std::string("  ") + model::to_string(c) + " ";
  for (std::string line; std::getline(in, line);)
    if (line.rfind(name, 0) == 0 && line.find(label) != std::string::npos) {
      std::istringstream cols(line.substr(line.find(label) + label.size()));
      std::string mb, us;
      cols >> mb >> us;
      return us;
    }
  ADD_FAILURE() << "no row '" << name << "' " << label << " in:\n" << e.text;
  return "";
}

std::string as_printed_us(double seconds)
{
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", seconds * 1e6);
  return b;
}

}  // namespace

// GPT-3 175B on A100 (scenarios/default.yaml) without sequence parallelism: the all-reduce of tp 8 inside a DGX.
TEST(ExplainCollectives, TensorParallelAllReduceIsTheSimulationsRule)
{
  const auto e = explain("scenarios/default.yaml", {"parallel.sp=false"});
  const double bytes = first_forward_bytes(e, model::TpCollective::AllReduce);
  const auto group = e.plan.tp_group(0, 0);
  ASSERT_EQ(e.plan.placement.domain_of(group.front()), e.plan.placement.domain_of(group.back()));
  const double rule = collectives::collective_time(collectives::Kind::AllReduce, bytes, group, e.plan.placement,
                                                   collectives::fabric_of(e.s));
  EXPECT_GT(rule, 0);
  EXPECT_EQ(printed_us(e, model::TpCollective::AllReduce, "(tensor-parallel group)"), as_printed_us(rule));
}

// tp 16 with sequence parallelism on 8-GPU nodes: the reduce-scatter's group spans two nodes, so it runs on the
// NICs and pays the switch tiers' latency (parallel/fabric_routes.hpp) as the replay's does.
TEST(ExplainCollectives, ReduceScatterAcrossNodesIsTheSimulationsRule)
{
  const auto e = explain("scenarios/default.yaml", {"parallel.tp=16", "parallel.pp=8"});
  const double bytes = first_forward_bytes(e, model::TpCollective::ReduceScatter);
  const auto group = e.plan.tp_group(0, 0);
  ASSERT_EQ(group.size(), 16u);
  ASSERT_NE(e.plan.placement.domain_of(group.front()), e.plan.placement.domain_of(group.back()));
  const auto fabric = collectives::fabric_of(e.s);
  const double rule =
      collectives::collective_time(collectives::Kind::ReduceScatter, bytes, group, e.plan.placement, fabric);
  // Across nodes: slower than the same bytes over a group of 8 inside one node.
  EXPECT_GT(rule, collectives::collective_time(collectives::Kind::ReduceScatter, bytes,
                                               std::vector<int64_t>(group.begin(), group.begin() + 8),
                                               e.plan.placement, fabric));
  EXPECT_EQ(printed_us(e, model::TpCollective::ReduceScatter, "(tensor-parallel group)"), as_printed_us(rule));
}

// DeepSeek-V3 on 2,048 H800 (ep 64 over 8 nodes) with DeepEP: node-limited routing sends each token to 4 of the 8
// nodes of its top-8 experts, once per node, so the bytes between nodes are scaled by 4 / 8
// (model/node_limited_routing.hpp).
TEST(ExplainCollectives, ExpertAllToAllIsTheSimulationsRule)
{
  const auto e = explain("scenarios/examples/deepseek-v3-h800x2048.yaml", {});
  const double bytes = first_forward_bytes(e, model::TpCollective::AllToAll);
  const auto group = e.plan.ep_group(0, 0, 0);
  const auto fabric = collectives::fabric_of(e.s);
  const double scale =
      collectives::expert_inter_node_scale(e.s.model, group, e.plan.placement, e.plan.comm.moe_dispatcher);
  EXPECT_DOUBLE_EQ(scale, 0.5);
  const double rule = collectives::expert_all_to_all_time(bytes, group, e.plan.placement, fabric, e.s.model,
                                                          e.plan.comm.moe_dispatcher);
  EXPECT_EQ(printed_us(e, model::TpCollective::AllToAll, "(expert-parallel group)"), as_printed_us(rule));

  // The closed form is the replay's flows (plan_collective with the driver's scale, replay/driver_experts.cpp),
  // each member's alone on its links: its NVLink for the flows inside its node, its NIC for the rest, each after
  // its route's latency; the fastest member's time.
  const auto phases = collectives::plan_collective(collectives::Kind::AllToAll, bytes, group, e.plan.placement,
                                                   fabric, scale);
  ASSERT_EQ(phases.size(), 1u);
  EXPECT_EQ(phases.front().latency_s, 0.0);
  std::map<int64_t, double> local_bytes, remote_bytes;
  std::map<int64_t, int64_t> local_peers;
  for (const auto& f : phases.front().flows) {
    const bool local = e.plan.placement.domain_of(f.src) == e.plan.placement.domain_of(f.dst);
    (local ? local_bytes : remote_bytes)[f.src] += f.bytes;
    local_peers[f.src] += local;
  }
  double fastest = std::numeric_limits<double>::infinity();
  for (int64_t m : group) {
    double t = 0;
    if (local_peers[m] > 0)
      t = std::max(t, fabric.nvlink_latency_s + local_bytes[m] / fabric.device_nvlink_Bps(local_peers[m]));
    if (remote_bytes[m] > 0)
      t = std::max(t, fabric.nic_latency_s + remote_bytes[m] / fabric.nic_Bps);
    fastest = std::min(fastest, t);
  }
  EXPECT_NEAR(rule, fastest, 1e-9 * fastest);
  // Sent per copy (Megatron-Core's alltoall) the NIC-bound all-to-all would take about twice as long: the rule
  // carries the dispatcher's scale.
  EXPECT_LT(rule, 0.6 * collectives::expert_all_to_all_time(bytes, group, e.plan.placement, fabric, e.s.model,
                                                            model::TokenDispatcher::AllToAll));
}
