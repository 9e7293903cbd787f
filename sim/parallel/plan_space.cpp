#include "parallel/plan_space.hpp"

#include <cstdio>

#include "model/transformer.hpp"
#include "parallel/memory.hpp"

namespace dtsim::parallel {

using scenario::Recompute;
using scenario::Schedule;

PlanDimensions PlanDimensions::wide()
{
  PlanDimensions d;
  d.micro_batches = {1, 2, 4, 8};
  d.chunks = {1, 2, 3, 4};
  d.recompute = {Recompute::None, Recompute::Selective, Recompute::Full};
  d.gpipe = true;
  d.sp_both = true;
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
    return "global batch does not divide into microbatches (or interleaving needs a multiple of pp)";
  return key + ": " + diag.items().front().message;
}

}  // namespace

std::string describe_plan(const scenario::ScenarioSpec& s)
{
  char b[200];
  std::snprintf(b, sizeof b, "tp %lld pp %lld dp %lld%s%s mb %lld %s %s", (long long)s.parallel.tp,
                (long long)s.parallel.pp, (long long)s.parallel.dp,
                s.parallel.vpp > 1 ? (" vpp " + std::to_string(s.parallel.vpp)).c_str() : "",
                s.parallel.sp ? " sp" : "", (long long)s.training.micro_batch, scenario::to_string(s.training.recompute),
                scenario::to_string(s.schedule));
  return b;
}

PlanSpace enumerate_plans(const scenario::ScenarioSpec& base, const PlanDimensions& dims)
{
  PlanSpace space;
  const model::Transformer t(base.model);
  const int64_t devices = base.devices, layers = base.model.layers;
  auto consider = [&](scenario::ScenarioSpec s) {
    ++space.candidates;
    Diagnostics diag = scenario::check_plan(s);
    if (!diag.empty()) {
      ++space.invalid;
      ++space.pruned[reason_of(diag)];
      return;
    }
    if (!estimate_memory(s, t).fits()) {
      ++space.not_fitting;
      ++space.pruned["does not fit in device memory"];
      return;
    }
    space.fitting.push_back(std::move(s));
  };
  for (int64_t tp = 1; tp <= base.hardware.node.devices; tp *= 2)
    for (int64_t pp = 1; pp <= layers; ++pp) {
      if (layers % pp != 0 || devices % (tp * pp) != 0)
        continue;
      for (int64_t mb : dims.micro_batches)
        for (Recompute rc : dims.recompute)
          for (bool sp : {true, false}) {
            if (sp != (tp > 1) && !(dims.sp_both && tp > 1 && !sp))
              continue;
            for (int64_t vpp : dims.chunks) {
              if (vpp > 1 && pp < 2)
                continue;
              std::vector<Schedule> schedules;
              if (vpp > 1)
                schedules = {Schedule::Interleaved};
              else if (pp > 1 && dims.gpipe)
                schedules = {Schedule::OneFOneB, Schedule::GPipe};
              else
                schedules = {Schedule::OneFOneB};
              for (Schedule sc : schedules) {
                scenario::ScenarioSpec s = base;
                s.parallel.tp = tp;
                s.parallel.pp = pp;
                s.parallel.dp = devices / (tp * pp);
                s.parallel.vpp = vpp;
                s.parallel.sp = sp;
                s.schedule = sc;
                // The scenario's own uneven split fits its own pipeline shape only; others split evenly.
                if (pp != base.parallel.pp || vpp != base.parallel.vpp)
                  s.parallel.stage_layers.clear();
                s.training.micro_batch = mb;
                s.training.recompute = rc;
                consider(std::move(s));
              }
            }
          }
    }
  return space;
}

}  // namespace dtsim::parallel
