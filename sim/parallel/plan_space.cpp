#include "parallel/plan_space.hpp"

#include <algorithm>

#include <cstdio>

#include "model/transformer.hpp"
#include "parallel/memory.hpp"
#include "scenario/layer_partition.hpp"
#include "scenario/schedule_registry.hpp"

namespace dtsim::parallel {

using scenario::Recompute;

PlanDimensions PlanDimensions::wide(const scenario::ScenarioSpec& base)
{
  PlanDimensions d;
  d.micro_batches = {1, 2, 4, 8};
  d.chunks = {1, 2, 3, 4};
  if (std::find(d.chunks.begin(), d.chunks.end(), base.parallel.vpp) == d.chunks.end())
    d.chunks.push_back(base.parallel.vpp);
  d.recompute = {Recompute::None, Recompute::Selective, Recompute::Full};
  d.partial_recompute = true;
  d.gpipe = true;
  d.sp_both = true;
  auto with = [](auto values, auto own) {
    if (std::find(values.begin(), values.end(), own) == values.end())
      values.push_back(own);
    return values;
  };
  d.zero = with(std::vector<int>{0, 1}, base.parallel.zero);
  std::vector<int64_t> ep{1};
  for (int64_t e = 2; e <= base.model.experts; e *= 2)
    ep.push_back(e);
  d.ep = with(ep, base.parallel.ep);
  d.cp = with(base.training.seq_len >= 16384  ? std::vector<int64_t>{1, 2, 4}
              : base.training.seq_len >= 8192 ? std::vector<int64_t>{1, 2}
                                              : std::vector<int64_t>{1},
              base.parallel.cp);
  return d;
}

PlanDimensions PlanDimensions::full(const scenario::ScenarioSpec& base)
{
  PlanDimensions d = wide(base);
  // Stages 2 and 3 are tried on plans without pipeline parallelism only (see enumerate_plans).
  for (int z : {2, 3})
    if (std::find(d.zero.begin(), d.zero.end(), z) == d.zero.end())
      d.zero.push_back(z);
  d.overlaps = true;
  // expert_tp and ep_overlap triple a mixture of experts' plans (Mixtral 8x7B on 64 H100: 2,439 plans that fit ->
  // 5,516): full space only.
  d.expert_options = base.model.experts > 0;
  // fp8 (Transformer Engine style) where the device has an fp8 peak and curve and the scenario trains in bf16.
  if (base.training.precision == "bf16" && base.hardware.peak_flops("fp8") > 0 && base.hardware.device.has_gemm_fp8)
    d.precisions = {"bf16", "fp8"};
  // Context parallelism 2 from sequences of 4K tokens on (the wide space takes it from 8K): frontier runs at 4K
  // use it with latent attention and experts too (Megatron-Core: MultiLatentAttention passes its context-parallel
  // group to the rotary embedding and cp_comm_type to the core attention, megatron/core/transformer/
  // multi_latent_attention.py; megatron/core/transformer/moe/README.md, "Enable CP for MLA and DeepSeek-V3").
  if (base.training.seq_len >= 4096 && std::find(d.cp.begin(), d.cp.end(), 2) == d.cp.end())
    d.cp.push_back(2);
  return d;
}

namespace {

// The first problem that rules a plan out, in words a table can show.
std::string reason_of(const Diagnostics& diag)
{
  const std::string& key = diag.items().front().key_path;
  if (key == "parallel.tp")
    return "tp does not divide the heads or widths";
  if (key == "parallel.pp" || key == "parallel.vpp")
    return "pipeline stages x chunks do not divide the layers";
  if (key == "training.global_batch")
    return "global batch does not divide into microbatches (or interleaving needs a multiple of pp, DualPipe 2 pp)";
  return key + ": " + diag.items().front().message;
}

// Layers of each of `chunks` virtual stages when they do not divide the layers: ceil(layers / chunks) each, the
// shortfall taken one layer at a time from the ends inward (last, first, second to last, ...), which hold the output
// head and the embedding: Megatron-LM's uneven pipelines (--decoder-first/last-pipeline-num-layers), Llama 3 405B's
// 126 layers on 128 chunks ([0, 1, ..., 1, 0], Llama Team 2024, Sec. 3.3.2). Empty (the plan check then says the
// chunks do not divide the layers) where a chunk other than the ends would hold no layer.
std::vector<int64_t> uneven_split(int64_t layers, int64_t chunks)
{
  const int64_t per = (layers + chunks - 1) / chunks;
  std::vector<int64_t> split(size_t(chunks), per);
  int64_t shortfall = per * chunks - layers;
  for (int64_t k = 0; shortfall > 0; ++k) {
    const int64_t from_end = k / 2, i = k % 2 == 0 ? chunks - 1 - from_end : from_end;
    if (split[size_t(i)] > 0) {
      --split[size_t(i)];
      --shortfall;
    }
  }
  for (size_t i = 1; i + 1 < split.size(); ++i)
    if (split[i] == 0)
      return {};
  return split;
}

}  // namespace

std::string describe_plan(const scenario::ScenarioSpec& s, RecomputeWord word)
{
  char b[200];
  const auto& p = s.parallel;
  const std::string extra = (p.cp > 1 ? " cp " + std::to_string(p.cp) : "") +
                            (p.ep > 1 ? " ep " + std::to_string(p.ep) : "") +
                            (p.ep > 1 && p.tp > 1 && p.etp() == 1 ? " etp 1" : "") +
                            (p.ep > 1 && p.pairs_units(scenario::schedule_def(s.schedule).pairs_by_default)
                                 ? " ep-overlap"
                                 : "") +
                            (p.zero > 0 ? " zero " + std::to_string(p.zero) : "") +
                            (p.tp_overlap ? " tp-overlap" : "") + (p.param_gather_overlap ? " gather-overlap" : "") +
                            (p.pp_overlap ? " p2p-overlap" : "") +
                            (s.training.precision == "fp8" ? " fp8" : "");
  // "full 1": the first layer of each chunk recomputed (training.recompute_layers)
  const int64_t layers = s.training.recompute_layers;
  const std::string recompute = std::string(word == RecomputeWord::Labelled ? "recompute " : "") +
                                scenario::to_string(s.training.recompute) +
                                (layers > 0 ? " " + std::to_string(layers) : "");
  std::snprintf(b, sizeof b, "tp %lld pp %lld dp %lld%s%s%s mb %lld %s %s", (long long)p.tp, (long long)p.pp,
                (long long)p.dp, p.vpp > 1 ? (" vpp " + std::to_string(p.vpp)).c_str() : "", p.sp ? " sp" : "",
                extra.c_str(), (long long)s.training.micro_batch, recompute.c_str(),
                s.schedule.c_str());
  return b;
}

// The registry's schedules a plan with (or without) model chunks can run, those searched by default first; the
// others (GPipe) only when asked, and only with a pipeline. A split backward (zero bubble) fills a pipeline's
// bubble and changes nothing without one, so those schedules are tried only with pp > 1; DualPipe only with an even
// pp; a V (zb-v) only with two chunks.
namespace {

std::vector<std::string> searched_schedules(int64_t vpp, int64_t pp, bool also_on_request)
{
  std::vector<std::string> out;
  const bool chunked = vpp > 1;
  for (bool by_default : {true, false})
    for (const auto& d : scenario::schedule_registry())
      if (d.chunked == chunked && d.searched_by_default == by_default &&
          (d.chunk_placement != scenario::ChunkPlacement::V || vpp == 2) &&
          (by_default || (also_on_request && pp > 1)) && (!d.splits_backward || pp > 1) &&
          (!d.two_directions || pp % 2 == 0))
        out.push_back(d.name);
  return out;
}

}  // namespace

PlanSpace enumerate_plans(const scenario::ScenarioSpec& base, const PlanDimensions& dims)
{
  std::vector<scenario::ScenarioSpec> fitting;
  PlanSpace space =
      enumerate_plans(base, dims, [&fitting](const scenario::ScenarioSpec& plan) { fitting.push_back(plan); });
  space.fitting = std::move(fitting);
  return space;
}

PlanSpace enumerate_plans(const scenario::ScenarioSpec& base, const PlanDimensions& dims, const PlanVisitor& fits)
{
  PlanSpace space;
  const model::Transformer t(base.model);
  const int64_t devices = base.devices, layers = base.model.layers;
  // One spec for every candidate (a ScenarioSpec is about 11 KB of strings, vectors and maps: copying it per
  // candidate was most of DeepSeek-V3's full-space enumeration). Each loop below writes every field it varies on
  // every pass, taking the scenario's own value where it keeps it, so a candidate's fields are its loop values and
  // the scenario's, whatever came before it; consider() resets what check_plan and partial recomputation set.
  scenario::ScenarioSpec s = base;
  auto consider = [&]() {
    ++space.candidates;
    s.microbatches = base.microbatches;  // check_plan sets it on valid plans
    s.training.recompute_layers = base.training.recompute_layers;
    Diagnostics diag = scenario::check_plan(s);
    if (!diag.empty()) {
      ++space.invalid;
      ++space.pruned[reason_of(diag)];
      return;
    }
    if (!estimate_memory(s, derive_plan(s), t).fits()) {
      ++space.not_fitting;
      ++space.pruned["does not fit in device memory"];
      return;
    }
    if (dims.partial_recompute && s.training.recompute == Recompute::Full && s.training.recompute_layers == 0) {
      // Full recomputation fits: recompute only the fewest layers per chunk that still fit instead, as Megatron-LM
      // users set --recompute-num-layers. Memory only grows as fewer layers are recomputed, and recomputing more
      // only adds time, so the plan that recomputes every layer is not worth simulating when this one fits.
      const int64_t most = scenario::largest_chunk_layers(s);
      bool fewer_fit = false;
      for (int64_t n = 1; n < most && !fewer_fit; ++n) {
        s.training.recompute_layers = n;
        fewer_fit = estimate_memory(s, derive_plan(s), t).fits();
      }
      if (!fewer_fit)
        s.training.recompute_layers = 0;
    }
    fits(s);
  };
  const std::vector<int> zeros = dims.zero.empty() ? std::vector<int>{base.parallel.zero} : dims.zero;
  const std::vector<int64_t> eps = dims.ep.empty() ? std::vector<int64_t>{base.parallel.ep} : dims.ep;
  const std::vector<int64_t> cps = dims.cp.empty() ? std::vector<int64_t>{base.parallel.cp} : dims.cp;
  const std::vector<std::string> precisions =
      dims.precisions.empty() ? std::vector<std::string>{base.training.precision} : dims.precisions;
  // The overlap options a plan allows, each off (the frameworks' default) and on, when dims.overlaps; otherwise the
  // scenario's own settings (pp_overlap as the shape set it: only this loop writes it after the shape).
  auto consider_overlaps = [&]() {
    auto& p = s.parallel;
    if (!dims.overlaps) {
      p.tp_overlap = base.parallel.tp_overlap;
      p.param_gather_overlap = base.parallel.param_gather_overlap;
      consider();
      return;
    }
    const bool tp_ok = p.sp && p.tp > 1, gather_ok = p.zero == 1 || p.zero == 2, p2p_ok = p.pp > 1;
    const bool p2p_needed = scenario::schedule_def(s.schedule).needs_async_p2p;
    for (bool tp : {false, true})
      for (bool gather : {false, true})
        for (bool p2p : {false, true}) {
          if ((tp && !tp_ok) || (gather && !gather_ok) || (p2p && !p2p_ok) || (!p2p && p2p_needed))
            continue;
          p.tp_overlap = tp;
          p.param_gather_overlap = gather;
          p.pp_overlap = p2p;
          consider();
        }
  };
  // A plan's framework options on top of its shape: ZeRO stage, expert-parallel size, precision, overlaps.
  auto consider_options = [&]() {
    for (int zero : zeros)
      for (int64_t ep : eps)
        for (const std::string& precision : precisions) {
          // DeepSpeed refuses ZeRO 2 and 3 with pipeline parallelism (its pipeline engine asserts stage < 2) and
          // FSDP has no pipeline: such plans are not ones a framework runs, unless the scenario itself asks for one.
          if (zero >= 2 && s.parallel.pp > 1 && zero != base.parallel.zero)
            continue;
          s.parallel.zero = zero;
          s.parallel.ep = ep;
          s.training.precision = precision;
          if (!dims.expert_options || ep == 1) {
            s.parallel.expert_tp = base.parallel.expert_tp;
            s.parallel.ep_overlap = base.parallel.ep_overlap;
            consider_overlaps();
            continue;
          }
          // Experts split over tp (expert_tp = tp) or whole on each rank (expert_tp 1); a forward and a backward chunk
          // paired, each one's all-to-alls beside the other's compute, off and on where the schedule pairs them.
          const bool can_pair = scenario::schedule_def(s.schedule).pairs_units;
          for (int64_t etp : s.parallel.tp > 1 ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{0})
            for (bool pair : can_pair ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
              s.parallel.expert_tp = etp;
              s.parallel.ep_overlap = pair;
              consider_overlaps();
            }
        }
  };
  for (int64_t cp : cps)
    for (int64_t tp = 1; tp <= base.hardware.domain_devices(); tp *= 2)  // tp within one NVLink domain
      for (int64_t pp = 1; pp <= layers; ++pp) {
        if (devices % (tp * pp * cp) != 0)
          continue;
        for (int64_t mb : dims.micro_batches)
          for (Recompute rc : dims.recompute)
            for (bool sp : {true, false}) {
              if (sp != (tp > 1) && !(dims.sp_both && tp > 1 && !sp))
                continue;
              for (int64_t vpp : dims.chunks) {
                if (vpp > 1 && pp < 2)
                  continue;
                const std::vector<std::string> schedules = searched_schedules(vpp, pp, dims.gpipe);
                for (const std::string& sc : schedules) {
                  s.parallel.tp = tp;
                  s.parallel.pp = pp;
                  s.parallel.cp = cp;
                  s.parallel.dp = devices / (tp * pp * cp);
                  s.parallel.vpp = vpp;
                  s.parallel.sp = sp;
                  s.schedule = sc;
                  // A split backward runs its W passes while its pipeline transfers are in flight (scenario check).
                  s.parallel.pp_overlap = scenario::schedule_def(sc).needs_async_p2p || base.parallel.pp_overlap;
                  // The scenario's own uneven split fits its own pipeline shape only; others split evenly where
                  // the layers divide, else unevenly.
                  if (pp != base.parallel.pp || vpp != base.parallel.vpp || base.parallel.stage_layers.empty())
                    s.parallel.stage_layers =
                        layers % (pp * vpp) == 0 ? std::vector<int64_t>{} : uneven_split(layers, pp * vpp);
                  else
                    s.parallel.stage_layers = base.parallel.stage_layers;
                  s.training.micro_batch = mb;
                  s.training.recompute = rc;
                  consider_options();
                }
              }
            }
      }
  return space;
}

}  // namespace dtsim::parallel
