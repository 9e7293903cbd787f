#include "parallel/plan.hpp"

#include <algorithm>

#include "scenario/layer_shape.hpp"

#include "scenario/layer_partition.hpp"
#include "scenario/schedule_registry.hpp"

namespace dtsim::parallel {

int64_t DerivedPlan::stage_layers(int64_t stage) const
{
  int64_t n = 0;
  for (int64_t c = 0; c < groups.vpp; ++c)
    n += chunk_layers[size_t(partition_index(stage, c))];
  return n;
}

int64_t DerivedPlan::stage_recomputed_layers(int64_t stage) const
{
  int64_t n = 0;
  for (int64_t c = 0; c < groups.vpp; ++c)
    n += chunk_recomputed_layers[size_t(partition_index(stage, c))];
  return n;
}

int64_t DerivedPlan::stage_dense_layers(int64_t stage, const model::ModelSpec& m) const
{
  if (!m.moe() || m.dense_layers == 0)
    return 0;
  int64_t n = 0;
  for (int64_t c = 0; c < groups.vpp; ++c) {
    const size_t vs = size_t(partition_index(stage, c));
    n += std::clamp(m.dense_layers - chunk_first_layer[vs], int64_t(0), chunk_layers[vs]);
  }
  return n;
}

std::vector<int64_t> DerivedPlan::ep_group(int64_t stage, int64_t dp, int64_t tp) const
{
  return groups.experts_across_tp() ? placement.expert_group_across_tp(stage, dp, tp, groups.ep)
                                    : placement.rank_group(stage, dp, tp, groups.ep);
}

std::vector<int64_t> DerivedPlan::expert_dp_group(int64_t stage, int64_t dp, int64_t tp) const
{
  return groups.experts_across_tp() ? placement.expert_dp_group_across_tp(stage, dp, tp, groups.ep)
                                    : placement.expert_dp_group(stage, dp, tp, groups.ep);
}

std::vector<std::vector<int64_t>> DerivedPlan::expert_dp_groups(int64_t stage) const
{
  const int64_t ep = groups.ep, tp = groups.tp;
  std::vector<std::vector<int64_t>> out;
  if (groups.experts_across_tp()) {
    for (int64_t r = 0; r < ep; ++r)  // expert ranks 0 .. ep - 1 start one group each
      out.push_back(placement.expert_dp_group_across_tp(stage, r / tp, r % tp, ep));
    return out;
  }
  for (int64_t r = 0; r < tp; ++r)
    for (int64_t e = 0; e < ep; ++e)
      out.push_back(placement.expert_dp_group(stage, e, r, ep));
  return out;
}

DerivedPlan derive_plan(const scenario::ScenarioSpec& s)
{
  DerivedPlan p;
  const auto& par = s.parallel;
  const auto& tr = s.training;
  p.precision = training_precision(s);

  p.groups.tp = par.tp;
  p.groups.cp = par.cp;
  p.groups.ep = par.ep;
  p.groups.expert_tp = par.etp();
  p.groups.dp = par.dp;
  p.groups.pp = par.pp;
  p.schedule = &scenario::schedule_def(s.schedule);
  p.two_directions = p.schedule->two_directions;
  p.chunk_placement = p.schedule->chunk_placement;
  p.groups.vpp = p.two_directions ? 2 : par.vpp;
  p.groups.dense_dp = par.dp_cp();
  p.groups.expert_dp = par.expert_ranks() / par.ep;
  p.placement = Placement(par.dp_cp(), par.tp, par.pp, s.hardware.domain_devices());
  // Folded, the simulated pipeline is the one whose tp, cp and expert groups cross domains most where they cross
  // unevenly (the step waits for it); in full fidelity every device is simulated and dp 0 stays rank order's first.
  if (s.fidelity == scenario::Fidelity::Folded)
    p.placement.represent_slowest_pipeline({par.cp, par.ep, p.groups.experts_across_tp()});
  p.comm.dp_overlap = par.dp_overlap;
  p.comm.pp_overlap = par.pp_overlap;
  // PyTorch's async TP (stack kernels.tp_overlap: torch-micro-pipeline) names the collectives it overlaps in the
  // layer's own passes (model::fuse_micro_pipeline_tp); every other one runs as without tp_overlap.
  p.comm.tp_overlap = par.tp_overlap && !s.stack.tp_overlap_micro_pipeline;
  p.comm.pairs = par.pairs_units(p.schedule->pairs_by_default);
  p.comm.param_gather_overlap = par.param_gather_overlap;
  p.comm.zero = par.zero;
  p.comm.zero_gradients_all_reduce = s.stack.zero_gradients_all_reduce;
  p.comm.moe_dispatcher = par.moe_dispatcher;
  p.comm.reshard_after_forward = par.reshard_after_forward;
  p.comm.defer_gradient_sync = par.defer_gradient_sync;
  p.comm.dp_bucket_bytes = par.dp_bucket_bytes;

  // The kernel-level shape (fused attention, fp8 recipe and weight-cast share included) is the scenario's one
  // definition of it.
  p.shape = scenario::layer_shape(s);
  p.shape.block_scaled_bytes = p.precision.block_scaled_bytes;
  p.shape.per_tensor_amax = p.precision.per_tensor_amax;
  p.shape.columnwise_transposed = p.precision.columnwise_transposed;
  p.shape.block_scale_bytes = p.precision.block_scale_bytes;
  p.shape.per_gemm_scale_kernel = p.precision.per_gemm_scale_kernel;
  p.shape.saves_gathered_input_rowwise = p.precision.saves_gathered_input_rowwise;
  p.shape.gradient_bytes = p.precision.gradient_bytes;
  p.tokens_per_microbatch = tr.micro_batch * tr.seq_len;
  p.tokens_per_rank = tr.micro_batch * (tr.seq_len / par.cp);  // cp divides seq_len (checked when loaded)
  p.microbatches_per_step = double(tr.global_batch) / double(tr.micro_batch);

  p.chunk_layers = scenario::chunk_layers(s);
  int64_t first = 0;
  for (int64_t n : p.chunk_layers) {
    p.chunk_first_layer.push_back(first);
    p.chunk_recomputed_layers.push_back(scenario::recomputed_layers(s, n));
    first += n;
  }

  // Forward, backward (twice the forward) of every layer and of the logits (Narayanan et al. 2021, Sec. 5.1).
  const model::Transformer t(s.model);
  p.layer_forward_flops = t.layer_forward_flops(p.tokens_per_microbatch, tr.seq_len);
  double per_microbatch_forward =
      double(s.model.layers) * p.layer_forward_flops + t.logits_forward_flops(p.tokens_per_microbatch);
  if (s.model.moe() && s.model.dense_layers > 0) {  // the dense first layers in place of as many MoE layers
    p.dense_layer_forward_flops = t.layer_forward_flops(p.tokens_per_microbatch, tr.seq_len, true);
    per_microbatch_forward += double(s.model.dense_layers) * (p.dense_layer_forward_flops - p.layer_forward_flops);
  }
  p.model_flops_per_step = 3.0 * per_microbatch_forward * p.microbatches_per_step;
  return p;
}

}  // namespace dtsim::parallel
