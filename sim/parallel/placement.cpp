#include "parallel/placement.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <string>

#include "core/diagnostics.hpp"

namespace dtsim::parallel {

void Placement::place_on(std::vector<int64_t> nodes, int64_t cluster_size)
{
  // The caller (app/shared_fabric.cpp) has laid the jobs out; a wrong map is a bug, not an input error.
  if (int64_t(nodes.size()) != this->domains())
    throw InternalError("a job of " + std::to_string(this->domains()) + " domains placed on " +
                           std::to_string(nodes.size()));
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i] < 0 || nodes[i] >= cluster_size || (i > 0 && nodes[i] <= nodes[i - 1]))
      throw InternalError("job domains must increase within the cluster");
  cluster_nodes_ = std::move(nodes);
  cluster_size_ = cluster_size;
}

std::vector<int64_t> Placement::members_per_domain(const std::vector<int64_t>& group) const
{
  // Groups are mostly listed in device order, so that their domains never decrease: the runs of equal domains are
  // then the answer, found in one pass (a data-parallel group of 131,072 GPUs spans 16,384 domains); otherwise a
  // map sorts them.
  std::vector<int64_t> counts;
  int64_t last = -1;
  for (int64_t d : group) {
    const int64_t domain = domain_of(d);
    if (domain < last) {
      std::map<int64_t, int64_t> of_domain;
      for (int64_t m : group)
        ++of_domain[domain_of(m)];
      counts.clear();
      for (const auto& [domain_index, n] : of_domain)
        counts.push_back(n);
      return counts;
    }
    if (domain != last)
      counts.push_back(0);
    ++counts.back();
    last = domain;
  }
  return counts;
}

bool Placement::tp_group_straddles(int64_t stage, int64_t pipeline) const
{
  if (tp_ > per_domain_)  // every group spans several domains alike
    return false;
  const int64_t first = stage * dp_ * tp_ + pipeline * tp_;
  return first / per_domain_ != (first + tp_ - 1) / per_domain_;
}

int64_t Placement::tp_groups_straddling() const
{
  int64_t n = 0;
  for (int64_t st = 0; st < pp_; ++st)
    for (int64_t r = 0; r < dp_; ++r)
      n += tp_group_straddles(st, r) ? 1 : 0;
  return n;
}

namespace {

/// The share of its peers that the group's member with the fewest fellows in its domain reaches outside it.
double slowest_member_share_across(const Placement& placement, const std::vector<int64_t>& group)
{
  const std::vector<int64_t> counts = placement.members_per_domain(group);
  if (counts.size() < 2)
    return 0.0;
  const int64_t n = int64_t(group.size());
  return double(n - *std::min_element(counts.begin(), counts.end())) / double(n - 1);
}

}  // namespace

int64_t Placement::crossing_align(const CrossingGroups& groups) const
{
  const int64_t expert_block = groups.experts_across_tp ? std::max<int64_t>(1, groups.ep / tp_) : groups.ep;
  return std::lcm(std::max<int64_t>(1, groups.cp), std::max<int64_t>(1, expert_block));
}

int64_t Placement::crossing_period(const CrossingGroups& groups) const
{
  // Shifting pipeline r by q data-parallel indices shifts each of its groups by q * tp devices when q is a multiple
  // of crossing_align (its rank groups start at r, q later) and, for expert groups across TP ranks (which start at
  // a multiple of ep in device order), when ep divides q * tp. Where moreover the domain's devices divide q * tp,
  // every group moves by whole domains, and its members per domain, in domain order, stay as they were. That needs
  // every candidate's groups inside its stage's ranks (align divides dp; an expert group across TP ranks of a size
  // that neither divides nor is divided by tp may end past them and wrap): otherwise every candidate is compared.
  const int64_t align = crossing_align(groups);
  const bool across = groups.experts_across_tp && groups.ep > 1;
  if (dp_ % align != 0 || (across && groups.ep % tp_ != 0 && tp_ % groups.ep != 0))
    return dp_;
  int64_t period = std::lcm(align, per_domain_ / std::gcd(tp_, per_domain_));
  if (across)
    period = std::lcm(period, groups.ep / std::gcd(tp_, groups.ep));
  return period;
}

std::vector<double> Placement::pipeline_crossing(int64_t pipeline, const CrossingGroups& groups) const
{
  // The groups in rank order (coordinate dp r names pipeline r), whichever pipeline represents the others.
  Placement rank_order = *this;
  rank_order.first_dp_ = 0;
  std::vector<double> out;
  for (int64_t st = 0; st < pp_; ++st) {
    double share = tp_group_straddles(st, pipeline) ? 1.0 : 0.0;
    double ep_share = 0.0, cp_share = 0.0;
    if (groups.ep > 1 && groups.experts_across_tp)
      ep_share = slowest_member_share_across(*this, rank_order.expert_group_across_tp(st, pipeline, 0, groups.ep));
    for (int64_t r = 0; r < tp_; ++r) {
      if (groups.ep > 1 && !groups.experts_across_tp)
        ep_share = std::max(ep_share,
                            slowest_member_share_across(*this, rank_order.rank_group(st, pipeline, r, groups.ep)));
      if (groups.cp > 1 && members_per_domain(rank_order.rank_group(st, pipeline, r, groups.cp)).size() > 1)
        cp_share = 1.0;
    }
    out.push_back(share + ep_share + cp_share);
  }
  return out;
}

int64_t Placement::slowest_pipeline(const CrossingGroups& groups, int64_t candidates_below) const
{
  // The step waits for its slowest pipeline, and a pipeline in 1F1B runs at its slowest stage's pace: compare the
  // stage that crosses most first. On a tie the later stages decide, last first: the last stage (logits and loss)
  // is already the busiest in a transformer, so what it waits for adds to the step, while an earlier stage's delay
  // partly fills time it spends waiting on the later ones (measured on Qwen3-235B on 512 GB200, docs/performance.md).
  auto key = [](std::vector<double> c) {
    const double most = c.empty() ? 0.0 : *std::max_element(c.begin(), c.end());
    std::reverse(c.begin(), c.end());
    c.insert(c.begin(), most);
    return c;
  };
  int64_t best = 0;
  std::vector<double> slowest = key(pipeline_crossing(0, groups));
  const int64_t align = crossing_align(groups);
  for (int64_t r = align; r < std::min(dp_, candidates_below); r += align) {
    auto k = key(pipeline_crossing(r, groups));
    if (k > slowest) {
      slowest = std::move(k);
      best = r;
    }
  }
  return best;
}

void Placement::represent_slowest_pipeline(const CrossingGroups& groups)
{
  // Candidates repeat: pipeline r + period crosses as pipeline r does (crossing_period), and a tie keeps the first,
  // so the first period decides. On DGX-style hosts of 8 with tp 8 it holds one candidate, where dp / align
  // candidates of pp stages each cost DeepSeek-V3's full-space search most of its enumeration time.
  first_dp_ = slowest_pipeline(groups, crossing_period(groups));
}

std::string tp_straddling_note(const Placement& placement)
{
  const int64_t n = placement.tp_groups_straddling();
  if (n == 0)
    return "";
  // NCCL lays such a communicator's rings over NET between the domains, and NVLS needs every member in one
  // NVSwitch domain (collectives::GroupShape counts the domains a group spans).
  return std::to_string(n) + " of " + std::to_string(placement.tp_groups()) + " tp groups " +
         (n == 1 ? "spans" : "span") + " two NVLink domains: " + (n == 1 ? "its" : "their") +
         " collectives cross the scale-out network";
}

std::vector<int64_t> Placement::tp_group(int64_t stage, int64_t dp) const
{
  std::vector<int64_t> g;
  for (int64_t r = 0; r < tp_; ++r)
    g.push_back(device({stage, dp, r}));
  return g;
}

std::vector<int64_t> Placement::dp_group(int64_t stage, int64_t tp) const
{
  std::vector<int64_t> g;
  for (int64_t r = 0; r < dp_; ++r)
    g.push_back(device({stage, r, tp}));
  return g;
}

std::vector<int64_t> Placement::rank_group(int64_t stage, int64_t dp, int64_t tp, int64_t size) const
{
  std::vector<int64_t> g;
  for (int64_t r = dp / size * size; r < dp / size * size + size; ++r)
    g.push_back(device({stage, r, tp}));
  return g;
}

std::vector<int64_t> Placement::expert_dp_group(int64_t stage, int64_t dp, int64_t tp, int64_t ep) const
{
  std::vector<int64_t> g;
  for (int64_t r = dp % ep; r < dp_; r += ep)
    g.push_back(device({stage, r, tp}));
  return g;
}

std::vector<int64_t> Placement::expert_group_across_tp(int64_t stage, int64_t dp, int64_t tp, int64_t ep) const
{
  const int64_t first = (dp * tp_ + tp) / ep * ep;
  std::vector<int64_t> g;
  for (int64_t r = first; r < first + ep; ++r)
    g.push_back(device({stage, r / tp_, r % tp_}));
  return g;
}

std::vector<int64_t> Placement::expert_dp_group_across_tp(int64_t stage, int64_t dp, int64_t tp, int64_t ep) const
{
  std::vector<int64_t> g;
  for (int64_t r = (dp * tp_ + tp) % ep; r < dp_ * tp_; r += ep)
    g.push_back(device({stage, r / tp_, r % tp_}));
  return g;
}

}  // namespace dtsim::parallel
