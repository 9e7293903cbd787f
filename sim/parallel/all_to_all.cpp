#include "parallel/all_to_all.hpp"

#include <algorithm>
#include <limits>
#include <map>

#include "model/node_limited_routing.hpp"

namespace dtsim::collectives {

namespace {

// The group's members per scale-up domain. Counted per domain, not per pair: ep 256 has 65,280 pairs per
// all-to-all, and pricing them pair by pair was 2.7 % of the CPU of DeepSeek-V3's full-space search, whose bounds
// price every plan's all-to-alls.
std::map<int64_t, int64_t> members_per_domain(const std::vector<int64_t>& group, const parallel::Placement& placement)
{
  std::map<int64_t, int64_t> members;
  for (int64_t d : group)
    ++members[placement.domain_of(d)];
  return members;
}

}  // namespace

double expert_inter_node_scale(const model::ModelSpec& m, const std::vector<int64_t>& group,
                               const parallel::Placement& placement, model::TokenDispatcher d)
{
  return model::expert_inter_node_scale(m, int64_t(members_per_domain(group, placement).size()),
                                        model::sends_once_per_node(d));
}

std::vector<Flow> all_to_all_flows(double bytes, const std::vector<int64_t>& group,
                                   const parallel::Placement& placement, double inter_node_scale)
{
  std::vector<Flow> flows;
  if (group.size() < 2 || bytes <= 0)
    return flows;
  const double share = bytes / double(group.size());
  for (int64_t a : group)
    for (int64_t b : group)
      if (a != b)
        flows.push_back({a, b, placement.domain_of(a) != placement.domain_of(b) ? share * inter_node_scale : share});
  return flows;
}

double expert_all_to_all_time(double bytes, const std::vector<int64_t>& group, const parallel::Placement& placement,
                              const Fabric& fabric, const model::ModelSpec& m, model::TokenDispatcher d)
{
  if (group.size() < 2 || bytes <= 0)
    return 0;
  const auto members = members_per_domain(group, placement);
  const double scale = model::expert_inter_node_scale(m, int64_t(members.size()), model::sends_once_per_node(d));
  const double share = bytes / double(group.size());
  const int64_t peers = int64_t(group.size()) - 1;
  double fastest = std::numeric_limits<double>::infinity();
  for (const auto& [domain, count] : members) {
    const int64_t local = count - 1, remote = peers - local;
    double t = 0;
    if (local > 0)
      t = std::max(t, fabric.nvlink_latency_s + share * double(local) / fabric.device_nvlink_Bps(local));
    if (remote > 0)
      t = std::max(t, fabric.nic_latency_s + share * scale * double(remote) / fabric.nic_Bps);
    fastest = std::min(fastest, t);
  }
  return fastest;
}

}  // namespace dtsim::collectives
