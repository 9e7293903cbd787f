#include "parallel/placement.hpp"

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
