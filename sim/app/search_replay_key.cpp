#include "app/search_replay_key.hpp"

#include <cstdio>
#include <map>
#include <tuple>
#include <unordered_map>

#include "core/diagnostics.hpp"
#include "parallel/plan.hpp"
#include "parallel/schedule.hpp"
#include "scenario/schedule_registry.hpp"

namespace dtsim::app {

namespace {

void put(std::string& k, int64_t v)
{
  k += std::to_string(v);
  k += ',';
}

// Exactly: a double's bits, as hexadecimal floating point.
void put(std::string& k, double v)
{
  char b[40];
  std::snprintf(b, sizeof b, "%a,", v);
  k += b;
}

void put(std::string& k, const std::string& v)
{
  put(k, int64_t(v.size()));
  k += v;
  k += ',';
}

// Every field SearchPlans keeps of a plan (the rest of the spec is the same for every plan of the space) but the
// schedule's name; parallel.pp_overlap only when `with_pp_overlap`.
std::string plan_fields(const scenario::ScenarioSpec& s, bool with_pp_overlap)
{
  const scenario::ParallelSpec& p = s.parallel;
  const scenario::TrainingSpec& t = s.training;
  std::string k = "plan:";
  for (int64_t v : {p.dp, p.tp, p.pp, p.cp, p.vpp, int64_t(p.sp), int64_t(p.dp_overlap),
                    int64_t(with_pp_overlap && p.pp_overlap), int64_t(p.tp_async_allreduce),
                    int64_t(p.ep_overlap.has_value()), int64_t(p.ep_overlap.value_or(false)), int64_t(p.tp_overlap),
                    int64_t(p.zero), int64_t(p.param_gather_overlap), int64_t(p.reshard_after_forward),
                    int64_t(p.defer_gradient_sync), p.ep, p.expert_tp, int64_t(p.moe_dispatcher),
                    int64_t(p.moe_preprocess_graphed), int64_t(p.ub_proj_fprop_sm_margin),
                    int64_t(p.ub_fc2_fprop_sm_margin), int64_t(p.ub_proj_fprop_method),
                    int64_t(p.ub_fc2_fprop_method), int64_t(p.stage_layers.size())})
    put(k, v);
  put(k, p.dp_bucket_bytes);
  put(k, p.ub_proj_fprop_sms);
  put(k, p.ub_fc2_fprop_sms);
  for (int64_t v : p.stage_layers)
    put(k, v);
  k += "training:";
  // Under fused attention selective recomputation re-runs nothing: the step program of `selective` is `none`'s
  // (model/transformer.cpp leaves selective_recompute empty; replay/step_program.cpp adds no kernel for it, and the
  // hardware FLOPs count none), so the two replay alike. Memory differs and stays each plan's own.
  const scenario::Recompute replayed =
      t.recompute == scenario::Recompute::Selective && t.flash_attention ? scenario::Recompute::None : t.recompute;
  for (int64_t v : {t.global_batch, t.micro_batch, t.seq_len, int64_t(t.micro_batch_auto), int64_t(replayed),
                    t.recompute_layers, int64_t(t.op_checkpoint), int64_t(t.grad_accumulation_fusion),
                    int64_t(t.flash_attention), int64_t(t.fp8_recipe), int64_t(t.fp8_norm_amax),
                    int64_t(t.cross_entropy), int64_t(t.optimizer_state), int64_t(t.fp8_params), s.microbatches})
    put(k, v);
  for (double v : {t.expert_imbalance, t.expert_capacity_factor, t.tokens})
    put(k, v);
  put(k, t.precision);
  put(k, t.micro_batch_reason);
  put(k, t.recompute_reason);
  return k;
}

// The registry entry's flags that derive_plan (two_directions, chunk_placement, pairs_by_default), the step program
// (splits_backward) and the enumeration (chunked, needs_async_p2p) read; its name, summary and memory rule not.
std::string schedule_flags(const scenario::ScheduleDef& d)
{
  std::string k = "flags:";
  for (bool v : {d.chunked, d.splits_backward, d.needs_async_p2p, d.two_directions, d.pairs_units, d.pairs_by_default})
    put(k, int64_t(v));
  put(k, int64_t(d.chunk_placement));
  return k;
}

// The pipeline schedule as the replay and the bound read it: its shape, every unit, every edge, and each stage's
// order, groups and pairings.
std::string schedule_fingerprint(const parallel::PipelineSchedule& sc)
{
  std::string k = "schedule:";
  for (int64_t v : {sc.stages, sc.chunks, sc.microbatches, int64_t(sc.two_directions), int64_t(sc.placement),
                    int64_t(boost::num_vertices(sc.graph)), int64_t(boost::num_edges(sc.graph))})
    put(k, v);
  for (size_t u = 0; u < boost::num_vertices(sc.graph); ++u) {
    const parallel::Unit& x = sc.graph[parallel::UnitId(u)];
    for (int64_t v : {x.stage, x.chunk, x.microbatch, int64_t(x.backward), int64_t(x.part)})
      put(k, v);
  }
  k += "edges:";
  for (auto [e, end] = boost::edges(sc.graph); e != end; ++e) {
    put(k, int64_t(boost::source(*e, sc.graph)));
    put(k, int64_t(boost::target(*e, sc.graph)));
    put(k, int64_t(sc.graph[*e].kind));
  }
  for (size_t st = 0; st < sc.order.size(); ++st) {
    k += "stage:";
    for (parallel::UnitId u : sc.order[st])
      put(k, int64_t(u));
    k += "groups:";
    for (int64_t g : sc.group[st])
      put(k, g);
    k += "beside:";
    for (char b : sc.beside_previous[st])
      put(k, int64_t(b));
  }
  return k;
}

size_t intern(std::unordered_map<std::string, size_t>& classes, std::string key)
{
  return classes.try_emplace(std::move(key), classes.size()).first->second;
}

}  // namespace

std::string plan_replay_key(const scenario::ScenarioSpec& s) { return plan_fields(s, true); }

ReplayKeys::ReplayKeys(const SearchPlans& plans)
{
  classify(plans);
  release_free_memory();  // the keys' text, tens of MB on DeepSeek-V3's full space, freed by classify
}

void ReplayKeys::classify(const SearchPlans& plans)
{
  const size_t n = plans.size();
  // The schedule's part of the key, per (schedule, stages, chunks, microbatches): its flags and its schedule,
  // interned so that two schedules that build the same one get the same text.
  std::map<std::tuple<std::string, int64_t, int64_t, int64_t>, std::string> schedule_class;
  std::unordered_map<std::string, size_t> schedules;
  std::unordered_map<std::string, size_t> replays, bounds;
  replay_class_.resize(n);
  bound_class_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const scenario::ScenarioSpec s = plans.plan_only(i);
    const scenario::ScheduleDef& def = scenario::schedule_def(s.schedule);
    auto [it, added] =
        schedule_class.try_emplace({s.schedule, s.parallel.pp, s.parallel.vpp, s.microbatches}, std::string());
    if (added) {
      if (def.timed_stage_orders) {
        // Its order depends on the step program's pass times: no other schedule's plan shares its step.
        it->second = "timed:" + s.schedule;
      } else {
        // As prepare_gpu_step builds it (systems/gpu_cluster/gpu_step.cpp), on the plan's derived stage and chunk
        // counts; the pass times are not read by an order that is not list-scheduled on them.
        const parallel::DerivedPlan plan = parallel::derive_plan(plans.at(i));
        try {
          const parallel::PipelineSchedule sc =
              parallel::build_schedule(s.schedule, plan.groups.pp, plan.groups.vpp, s.microbatches);
          it->second = "class:" + std::to_string(intern(schedules, schedule_flags(def) + schedule_fingerprint(sc)));
        } catch (const InternalError&) {
          it->second = "unbuilt:" + s.schedule;  // the bounds report it; nothing shared
        }
      }
    }
    replay_class_[i] = intern(replays, plan_fields(s, true) + it->second);
    bound_class_[i] = intern(bounds, plan_fields(s, false) + it->second);
  }
  replay_classes_ = replays.size();
  bound_classes_ = bounds.size();
}

}  // namespace dtsim::app
