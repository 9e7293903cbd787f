#include "parallel/placement.hpp"

namespace dtsim::parallel {

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

}  // namespace dtsim::parallel
