#include "parallel/step_collectives.hpp"

#include "parallel/collective.hpp"

namespace dtsim::parallel {

namespace {
constexpr double kFp32Bytes = 4;  // one fp32 (or int32) element: the norm, the update flag, the largest norm
constexpr double kLossBytes = 8;  // Megatron-LM's reported loss: [sum of the losses, tokens], two fp32
}  // namespace

StepCollectives step_collectives(const scenario::ScenarioSpec& s, const DerivedPlan& plan)
{
  const Placement& pl = plan.placement;
  const collectives::Fabric fabric = collectives::fabric_of(s);
  // The model-parallel group of data-parallel rank 0: every tensor-parallel rank of every stage.
  std::vector<int64_t> model_parallel;
  for (int64_t st = 0; st < pl.pp(); ++st)
    for (int64_t t = 0; t < pl.tp(); ++t)
      model_parallel.push_back(pl.device({st, 0, t}));
  auto all_reduce = [&](double bytes, const std::vector<int64_t>& group) {
    return collectives::collective_time(collectives::Kind::AllReduce, bytes, group, pl, fabric);
  };
  StepCollectives c;
  // A distributed optimizer holds 1/dp of each gradient: its norm needs every rank.
  // Every rank's group is timed from its shape alone: a frontier job's is 131,072 devices.
  c.grad_norm_s = plan.comm.zero >= 1 ? collectives::collective_time(collectives::Kind::AllReduce, kFp32Bytes,
                                                                     collectives::every_device_layout(pl, fabric),
                                                                     fabric)
                                      : all_reduce(kFp32Bytes, model_parallel);
  c.agreement_s = 2 * all_reduce(kFp32Bytes, model_parallel);
  // The last stage's data-parallel group laid out from its stride: a frontier stage's thousand ranks, unlisted.
  if (s.stack.loss_all_reduce_per_microbatch)
    c.loss_s = double(s.microbatches) *
               collectives::collective_time(collectives::Kind::AllReduce, kLossBytes,
                                            collectives::group_layout(pl.dp_ranks(pl.pp() - 1, 0), pl, fabric), fabric);
  return c;
}

}  // namespace dtsim::parallel
