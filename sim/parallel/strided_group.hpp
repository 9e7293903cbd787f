#pragma once
/// A group of ranks evenly spaced in device order, first + i * stride for i < count: a data-parallel group (every tp
/// devices of a stage). A frontier job's has a thousand members; where each sits at the same place of its own
/// scale-up domain (stride a multiple of the devices used per domain), what its collectives need (members per domain,
/// shape, switch tiers spanned, a member's ring and tree neighbours) has closed forms, found without listing it
/// (parallel/collective.hpp, group_layout; FabricRoutes::switches_spanned).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dtsim::parallel {

struct StridedGroup {
  int64_t first = 0, stride = 1, count = 0;
  int64_t at(int64_t i) const { return first + i * stride; }
  int64_t last() const { return at(count - 1); }
  std::vector<int64_t> list() const
  {
    std::vector<int64_t> out;
    out.reserve(std::size_t(count > 0 ? count : 0));
    for (int64_t i = 0; i < count; ++i)
      out.push_back(at(i));
    return out;
  }
};

}  // namespace dtsim::parallel
