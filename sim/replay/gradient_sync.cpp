#include "replay/gradient_sync.hpp"

namespace dtsim::replay {

bool reduces_gradients(const parallel::DerivedPlan& plan, int64_t microbatches, const parallel::Unit& u)
{
  const bool every_microbatch = plan.comm.zero >= 2 && !plan.comm.defer_gradient_sync;
  return plan.groups.dense_dp > 1 && (every_microbatch || u.microbatch == microbatches - 1);
}

bool releases_buckets(const parallel::DerivedPlan& plan, int64_t microbatches, const parallel::Unit& u)
{
  return plan.comm.dp_overlap && reduces_gradients(plan, microbatches, u);
}

collectives::Kind gradient_collective(const parallel::DerivedPlan& plan)
{
  // DeepSpeed's stages 1 and 2 all-reduce each bucket and keep the rank's slice (stack kernels.zero_gradients).
  const bool scatter = plan.comm.zero >= 3 || (plan.comm.zero >= 1 && !plan.comm.zero_gradients_all_reduce);
  return scatter ? collectives::Kind::ReduceScatter : collectives::Kind::AllReduce;
}

std::vector<double> gradient_buckets(const ChunkGradients& grads, double bucket_bytes)
{
  // Each model chunk is its own data-parallel module with its own buckets (Megatron-LM, PyTorch DDP).
  const auto& g = grads.bytes;
  std::vector<double> at(g.size(), 0.0);
  double acc[2] = {0, 0};
  int last[2] = {-1, -1};
  for (size_t i = 0; i < g.size(); ++i)
    last[grads.is_expert(i) ? 1 : 0] = int(i);
  for (size_t i = 0; i < g.size(); ++i) {
    const int kind = grads.is_expert(i) ? 1 : 0;
    acc[kind] += g[i];
    if (acc[kind] >= bucket_bytes || int(i) == last[kind]) {
      at[i] = acc[kind];
      acc[kind] = 0;
    }
  }
  return at;
}

std::pair<double, double> whole_stage_gradients(const std::vector<ChunkGradients>& chunks)
{
  double dense = 0, experts = 0;
  for (const auto& chunk : chunks)
    for (size_t i = 0; i < chunk.bytes.size(); ++i)
      (chunk.is_expert(i) ? experts : dense) += chunk.bytes[i];
  return {dense, experts};
}

}  // namespace dtsim::replay
