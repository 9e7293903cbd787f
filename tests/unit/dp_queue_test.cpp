// The data-parallel communicator's queue (replay/dp_queue.hpp) on tiny-moe (tp 2, ep 4, dp 8 on 16 A100: the
// experts' data-parallel groups hold 2 ranks, the dense one 8): the collectives of expert parameters (gradient
// buckets, ZeRO gathers, the refresh after the optimizer) go over the expert-data-parallel group, the others over the
// dense data-parallel group. The operations were once made by brace lists of six fields with five values, which put
// `is_expert` in the operation's unit and left its `expert` false: every expert collective ran over the dense group.
// One in-process simulation per TEST (one SimGrid engine per process).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "parallel/collective.hpp"
#include "kernels/compute_model.hpp"
#include "model/transformer.hpp"
#include "parallel/plan.hpp"
#include "parallel/schedule.hpp"
#include "platform/cluster_platform.hpp"
#include "replay/activities.hpp"
#include "replay/collective_runner.hpp"
#include "replay/comm_costs.hpp"
#include "replay/dp_queue.hpp"
#include "replay/folding.hpp"
#include "replay/group_collectives.hpp"
#include "replay/step_program.hpp"
#include "scenario/scenario_spec.hpp"
#include "test_paths.hpp"

namespace {

using namespace dtsim;
using replay::DpOp;

struct Done {
  DpOp op;
  int within_node = 0, across_nodes = 0;  // the collective's flows
};

TEST(DataParallelQueue, ExpertCollectivesGoOverTheExpertDataParallelGroup)
{
  const auto s = scenario::load_scenario(test::source_path("scenarios/tiny-moe.yaml"), {});
  const auto plan = parallel::derive_plan(s);
  ASSERT_EQ(plan.groups.dense_dp, 8);
  ASSERT_EQ(plan.groups.expert_dp, 2);
  const model::Transformer t(s.model);
  const kernels::ComputeModel cm(s.hardware.device, s.training.precision);
  const auto prog = replay::build_step_program(s, plan, t, cm);
  const auto sched = parallel::build_schedule(s.schedule, plan.groups.pp, plan.groups.vpp, s.microbatches);

  // The replay's own pieces, as replay::Driver builds them (folded: device 0 stands for its stage).
  replay::Activities acts;
  const auto fabric = collectives::fabric_of(s);
  replay::Folding folding(plan, plan.placement, s.hardware, fabric, false);
  replay::GroupCollectives groups(plan, plan.placement, fabric, folding, false);
  replay::CollectiveRunner comm(acts, plan.placement, folding);
  replay::CommCosts costs(groups, s.hardware, false);
  platform::ClusterPlatform platform(s.hardware, plan.placement, folding.needed_devices());
  comm.attach(platform);
  std::vector<Done> done;
  const int64_t node = s.hardware.node.devices;  // 8: dp 0..3 on the first node, dp 4..7 on the second
  replay::DataParallelQueue* queue = nullptr;
  replay::DataParallelQueue dp(
      acts, plan, prog, sched, groups, comm, costs, false,
      [&](size_t di, const DpOp& op, double) {
        Done d{op};
        for (const auto& ph : *groups.dp(0, op.kind, op.bytes, op.expert))
          for (const auto& f : ph.flows)
            ++(f.src / node == f.dst / node ? d.within_node : d.across_nodes);
        done.push_back(d);
        queue->pump(di);
      },
      [](size_t) {});
  queue = &dp;
  dp.add_device(0);

  // The last microbatch's backward of the chunk releases every gradient bucket; then the refresh after the optimizer
  // and a ZeRO-3 gather of expert parameters.
  const auto& grads = prog.gradients.at(0).at(0);
  const double MiB = 1048576.0;
  acts.run([&]() {
    parallel::Unit u;
    u.backward = true;
    u.microbatch = sched.microbatches - 1;
    ASSERT_TRUE(dp.releases_buckets(u));
    for (size_t i = grads.bytes.size(); i-- > 0;)
      dp.grad_ready(0, u, int(i));
    dp.queue_refresh(0, 3 * MiB, 5 * MiB);
    replay::Step gather;
    gather.kind = replay::Step::Kind::ParamGather;
    gather.bytes = 7 * MiB;
    gather.expert = true;
    dp.issue_gather(0, 1, 2, gather);
    dp.pump(0);
  });

  double expert_gradients = 0, dense_gradients = 0, expert_refresh = 0, dense_refresh = 0;
  int expert_gathers = 0;
  for (const auto& d : done) {
    const auto& op = d.op;
    std::printf("[dp queue] %s %.0f bytes over the %s group: %d flows within a node, %d across\n",
                op.what == DpOp::What::Gradients     ? "gradients"
                : op.what == DpOp::What::ParamGather ? "gather"
                                                     : "refresh",
                op.bytes, op.expert ? "expert-dp" : "dp", d.within_node, d.across_nodes);
    // An expert group holds one rank of each node: its flows all cross. The dense group has four ranks on each.
    EXPECT_GT(d.across_nodes, 0);
    if (op.expert)
      EXPECT_EQ(d.within_node, 0);
    else
      EXPECT_GT(d.within_node, 0);
    if (op.what == DpOp::What::Gradients)
      (op.expert ? expert_gradients : dense_gradients) += op.bytes;
    if (op.what == DpOp::What::ParamRefresh)
      (op.expert ? expert_refresh : dense_refresh) += op.bytes;
    if (op.what == DpOp::What::ParamGather) {
      expert_gathers += op.expert;
      EXPECT_EQ(op.unit, parallel::UnitId(1));
      EXPECT_EQ(op.step, 2u);
    }
  }
  ASSERT_GT(grads.sum(true), 0.0);
  EXPECT_DOUBLE_EQ(expert_gradients, grads.sum(true));
  EXPECT_DOUBLE_EQ(dense_gradients, grads.sum(false));
  EXPECT_EQ(expert_refresh, 5 * MiB);
  EXPECT_EQ(dense_refresh, 3 * MiB);
  EXPECT_EQ(expert_gathers, 1);
  EXPECT_EQ(plan.expert_dp_group(0, 0, 0), (std::vector<int64_t>{0, 8}));  // dp 0 and 4, one on each node
}

}  // namespace
