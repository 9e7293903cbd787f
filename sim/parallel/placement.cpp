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

}  // namespace dtsim::parallel
