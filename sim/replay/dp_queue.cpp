#include "replay/dp_queue.hpp"

#include "replay/gradient_sync.hpp"

namespace dtsim::replay {

DpOp DpOp::gradients(collectives::Kind kind, double bytes, Group group)
{
  DpOp op(What::Gradients);
  op.kind = kind;
  op.bytes = bytes;
  op.expert = group == Group::Experts;
  return op;
}

DpOp DpOp::param_gather(double bytes, parallel::UnitId unit, size_t step, Group group)
{
  DpOp op(What::ParamGather);
  op.kind = collectives::Kind::AllGather;
  op.bytes = bytes;
  op.unit = unit;
  op.step = step;
  op.expert = group == Group::Experts;
  return op;
}

DpOp DpOp::param_refresh(double bytes, Group group)
{
  DpOp op(What::ParamRefresh);
  op.kind = collectives::Kind::AllGather;
  op.bytes = bytes;
  op.expert = group == Group::Experts;
  return op;
}

DataParallelQueue::DataParallelQueue(Activities& acts, const parallel::DerivedPlan& plan, const StepProgram& prog,
                                     const parallel::PipelineSchedule& sched, GroupCollectives& groups,
                                     CollectiveRunner& comm, const CommCosts& costs, bool full, Done done, Idle idle)
    : acts_(acts), plan_(plan), prog_(prog), sched_(sched), groups_(groups), comm_(comm), costs_(costs), full_(full),
      done_(std::move(done)), idle_(std::move(idle))
{
  setup_buckets();
}

void DataParallelQueue::add_device(int64_t device)
{
  Communicator c;
  c.device = device;
  c.coord = plan_.placement.coord(device);
  queues_.push_back(std::move(c));
}

void DataParallelQueue::setup_buckets()
{
  const int64_t pp = plan_.groups.pp, v = int64_t(prog_.gradients.at(0).size());  // chunks per stage
  bucket_at_.assign(size_t(pp), std::vector<std::vector<double>>(size_t(v)));
  for (int64_t st = 0; st < pp; ++st)
    for (int64_t c = 0; c < v; ++c)
      bucket_at_[size_t(st)][size_t(c)] =
          gradient_buckets(prog_.gradients[size_t(st)][size_t(c)], plan_.comm.dp_bucket_bytes);
}

bool DataParallelQueue::reduces_gradients(const parallel::Unit& u) const
{
  return replay::reduces_gradients(plan_, sched_.microbatches, u);
}

bool DataParallelQueue::releases_buckets(const parallel::Unit& u) const
{
  return replay::releases_buckets(plan_, sched_.microbatches, u);
}

collectives::Kind DataParallelQueue::gradient_collective() const { return replay::gradient_collective(plan_); }

void DataParallelQueue::grad_ready(size_t di, const parallel::Unit& u, int index)
{
  if (!releases_buckets(u))
    return;
  const int64_t stage = queues_[di].coord.stage;
  double bytes = bucket_at_[size_t(stage)][size_t(u.chunk)][size_t(index)];
  const bool is_expert = prog_.gradients[size_t(stage)][size_t(u.chunk)].is_expert(size_t(index));
  if (bytes > 0 && (!is_expert || experts_replicated())) {
    queues_[di].ops.push_back(DpOp::gradients(gradient_collective(), bytes, DpOp::group_of(is_expert)));
    pump(di);
  }
}

void DataParallelQueue::enqueue_gradients(size_t di, double total, double experts)
{
  if (total > 0)
    queues_[di].ops.push_back(DpOp::gradients(gradient_collective(), total, DpOp::Group::Dense));
  if (experts > 0 && experts_replicated())
    queues_[di].ops.push_back(DpOp::gradients(gradient_collective(), experts, DpOp::Group::Experts));
  pump(di);
}

void DataParallelQueue::backward_unit_done(size_t di, const parallel::Unit& u)
{
  // Without overlap, sharded gradients (ZeRO 2, 3) are reduce-scattered once the chunk's backward is over;
  // replicated ones once the whole backward is over (backward_done).
  if (plan_.comm.dp_overlap || plan_.comm.zero < 2 || !u.makes_gradients() || !reduces_gradients(u))
    return;
  const auto& g = prog_.gradients[size_t(queues_[di].coord.stage)][size_t(u.chunk)];
  enqueue_gradients(di, g.sum(false), g.sum(true));
}

void DataParallelQueue::backward_done(size_t di)
{
  if (plan_.groups.dense_dp > 1 && !plan_.comm.dp_overlap && plan_.comm.zero < 2) {  // one collective of every gradient
    const auto [total, experts] = whole_stage_gradients(prog_.gradients[size_t(queues_[di].coord.stage)]);
    enqueue_gradients(di, total, experts);
    return;
  }
  pump(di);
}

void DataParallelQueue::issue_gather(size_t di, parallel::UnitId unit, size_t step, const Step& st)
{
  Communicator& q = queues_[di];
  if (q.gathers.count({unit, step}))
    return;
  q.gathers[{unit, step}] = 1;
  q.ops.push_back(DpOp::param_gather(st.bytes, unit, step, DpOp::group_of(st.expert)));
}

bool DataParallelQueue::take_gathered(size_t di, parallel::UnitId unit, size_t step)
{
  auto& gathers = queues_[di].gathers;
  auto it = gathers.find({unit, step});
  const bool ready = it != gathers.end() && it->second == 2;
  if (ready)
    gathers.erase(it);
  return ready;
}

int DataParallelQueue::queue_refresh(size_t di, double dense_bytes, double expert_bytes)
{
  Communicator& q = queues_[di];
  if (dense_bytes > 0)
    q.ops.push_back(DpOp::param_refresh(dense_bytes, DpOp::Group::Dense));
  if (expert_bytes > 0)
    q.ops.push_back(DpOp::param_refresh(expert_bytes, DpOp::Group::Experts));
  return int(q.ops.size());
}

void DataParallelQueue::pump(size_t di)
{
  Communicator& q = queues_[di];
  if (q.busy || q.ops.empty()) {
    idle_(di);
    return;
  }
  q.busy = true;
  const DpOp op = q.ops.front();
  q.ops.pop_front();
  const int64_t seq = q.seq++;
  double t0 = Activities::now();
  Phases phases = groups_.dp(q.device, op.kind, op.bytes, op.expert);
  // Its kernels hold their SMs from launch to end, waiting for the group's other members included: the compute
  // that runs meanwhile (the backward beside the gradient buckets, the forward beside the parameter gathers) runs
  // on the rest.
  const double share = costs_.nccl_sm_share();
  Activities::Occupation* kernels = share > 0 ? acts_.occupy(comm_.gpu_host(q.device), share) : nullptr;
  auto finished = [this, di, op, t0, kernels]() {
    if (kernels != nullptr)
      acts_.release(kernels);
    Communicator& q = queues_[di];
    q.busy = false;
    if (op.what == DpOp::What::ParamGather)
      q.gathers[{op.unit, op.step}] = 2;
    done_(di, op, t0);
  };
  if (!full_) {
    comm_.run_phases(phases, 0, finished);
    return;
  }
  // Full: the group's members join; the collective starts when the last one arrives. Every device issues the
  // same sequence of collectives, expert ones included, so the sequence number names the instance.
  const parallel::Coord& c = q.coord;
  const int64_t group =
      c.stage * plan_.groups.tp * plan_.groups.ep + (op.expert ? plan_.expert_dp_index(c) : c.tp * plan_.groups.ep);
  const int64_t members = op.expert ? plan_.groups.expert_dp : plan_.groups.dense_dp;
  comm_.run_joined({op.expert ? CollectiveRunner::kExpertDpGroup : CollectiveRunner::kDpGroup, group, seq}, members,
                   di, phases, finished);
}

}  // namespace dtsim::replay
