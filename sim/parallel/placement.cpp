#include "parallel/placement.hpp"

#include <algorithm>
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

void Placement::represent_slowest_pipeline(int64_t align)
{
  int64_t best = 0, most = 0;
  for (int64_t r = 0; r < dp_; r += std::max<int64_t>(1, align)) {
    int64_t n = 0;
    for (int64_t st = 0; st < pp_; ++st)
      n += tp_group_straddles(st, r) ? 1 : 0;
    if (n > most) {
      most = n;
      best = r;
    }
  }
  first_dp_ = best;
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
