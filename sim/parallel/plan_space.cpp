#include "parallel/plan_space.hpp"

#include "model/transformer.hpp"
#include "parallel/memory.hpp"

namespace dtsim::parallel {

using scenario::Recompute;
using scenario::Schedule;

PlanSpace enumerate_plans(const scenario::ScenarioSpec& base)
{
  PlanSpace space;
  const model::Transformer t(base.model);
  const int64_t devices = base.devices, layers = base.model.layers;
  for (int64_t tp = 1; tp <= base.hardware.node.devices; tp *= 2)
    for (int64_t pp = 1; pp <= layers; ++pp) {
      if (layers % pp != 0 || devices % (tp * pp) != 0)
        continue;
      for (int64_t mb : {1, 2, 4})
        for (Recompute rc : {Recompute::Selective, Recompute::Full})
          for (int64_t vpp : {1, 2}) {
            if (vpp == 2 && pp < 2)
              continue;
            scenario::ScenarioSpec s = base;
            s.parallel.tp = tp;
            s.parallel.pp = pp;
            s.parallel.dp = devices / (tp * pp);
            s.parallel.vpp = vpp;
            s.parallel.sp = tp > 1;
            s.schedule = vpp > 1 ? Schedule::Interleaved : Schedule::OneFOneB;
            s.training.micro_batch = mb;
            s.training.recompute = rc;
            ++space.candidates;
            if (!scenario::check_plan(s).empty()) {
              ++space.invalid;
              continue;
            }
            if (!estimate_memory(s, t).fits()) {
              ++space.not_fitting;
              continue;
            }
            space.fitting.push_back(std::move(s));
          }
    }
  return space;
}

}  // namespace dtsim::parallel
