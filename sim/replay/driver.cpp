#include "replay/driver.hpp"

#include <algorithm>

namespace dtsim::replay {

Driver::Driver(Activities& acts, const scenario::ScenarioSpec& s, const parallel::DerivedPlan& plan,
               const StepProgram& prog, const parallel::PipelineSchedule& sched, bool trace, const ClusterSlot* slot,
               int64_t sample)
    : acts_(acts), model_(s.model), plan_(plan), prog_(prog), sched_(sched),
      placement_(slot ? slot->placement : plan.placement), fabric_(collectives::fabric_of(s)),
      full_(s.fidelity == scenario::Fidelity::Full),
      folding_(plan, placement_, s.hardware, fabric_, full_), groups_(plan, placement_, fabric_, folding_, full_),
      comm_(acts, placement_, folding_),
      costs_(groups_, s.hardware, !full_ && folding_.nvlink_exclusive_to_tp(prog.embedding_sync_bytes > 0)),
      dp_(acts, plan, prog, sched, groups_, comm_, costs_, full_,
          [this](size_t di, const DpOp& op, double t0) { dp_op_done(di, op, t0); },
          [this](size_t di) { maybe_optimizer(di); }),
      trace_(trace),
      pipeline_(sched, prog, placement_, comm_, trace_, full_ ? plan.groups.dense_dp * plan.groups.tp : 1,
                plan.comm.pp_overlap,
                [this](size_t di, double entered, double covered) { exchanged(di, entered, covered); },
                [this](size_t di) { next_unit(di); }),
      var_(s.variability, placement_, plan.groups.tp, full_, sample)
{
  start_t_ = slot ? slot->start_t : 0.0;
  // Simulated devices: all of them, or one representative (dp 0, tp 0) per stage, ascending.
  std::vector<int64_t> simulated;
  for (int64_t d = 0; d < placement_.devices() && full_; ++d)
    simulated.push_back(d);
  for (int64_t st = 0; st < placement_.pp() && !full_; ++st)
    simulated.push_back(placement_.device({st, 0, 0}));
  for (int64_t d : simulated) {
    const auto c = placement_.coord(d);
    Device dev;
    dev.id = d;
    dev.coord = c;
    dev.free_t = start_t_;
    devices_.push_back(std::move(dev));
    dp_.add_device(d);
    pipeline_.add_device(d, c, full_ ? c.dp * plan.groups.tp + c.tp : 0);
  }
  if (slot == nullptr) {
    own_platform_ = std::make_unique<platform::ClusterPlatform>(s.hardware, placement_, folding_.needed_devices());
    attach(*own_platform_);
  }
  folding_note_ = folding_.asymmetry(pipeline_.stage_pairs(), prog.embedding_sync_bytes > 0);
}

void Driver::start()
{
  if (plan_.comm.param_gather_overlap)
    for (size_t i = 0; i < devices_.size(); ++i) {
      issue_refresh_gathers(i);
      dp_.pump(i);
    }
  for (size_t i = 0; i < devices_.size(); ++i)
    next_unit(i);
}

std::vector<int64_t> Driver::needed_cluster_devices() const
{
  std::vector<int64_t> out;
  const auto need = folding_.needed_devices();
  for (int64_t d : need)
    out.push_back(placement_.cluster_device(d));
  for (int64_t d = 0; d < placement_.devices() && need.empty(); ++d)
    out.push_back(placement_.cluster_device(d));
  return out;
}

ReplayResult Driver::finish()
{
  ReplayResult r;
  for (const auto& d : devices_)
    r.step_time_s = std::max(r.step_time_s, d.done_t - start_t_);
  std::vector<bool> seen(size_t(plan_.groups.pp), false);
  r.per_stage.resize(size_t(plan_.groups.pp));
  for (auto& d : devices_) {
    d.b.bubble_s += r.step_time_s - (d.done_t - start_t_);  // finished early: waits for the slowest device
    r.average += d.b;
    if (!seen[size_t(d.coord.stage)]) {
      seen[size_t(d.coord.stage)] = true;
      r.per_stage[size_t(d.coord.stage)] = d.b;
    }
  }
  r.average /= double(devices_.size());
  r.simulated_devices = int64_t(devices_.size());
  r.folding_note = folding_note_;
  r.activities = acts_.count();
  r.links = comm_.platform().link_count();
  r.trace = trace_.take();
  return r;
}

KernelFactor Driver::sampled_kernel_factor(const Device& d, int lane, size_t k) const
{
  const Lane& ln = d.lanes[size_t(lane)];
  return var_.kernel(d.id, int64_t(ln.unit), k, (*ln.steps)[k].jitter_weight);
}

// ---- activities ----------------------------------------------------------------------------------------
void Driver::exec_on(sg4::Host* host, double seconds, std::function<void()> fn)
{
  acts_.exec(host, seconds, std::move(fn));
}

}  // namespace dtsim::replay
