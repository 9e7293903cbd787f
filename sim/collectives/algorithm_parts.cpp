#include "collectives/algorithm_parts.hpp"

#include <algorithm>

namespace dtsim::collectives {

int log2i(int64_t v)
{
  int l = 0;
  while (v > 1) {
    v >>= 1;
    ++l;
  }
  return l;
}

double ring_volume(Kind kind, int64_t n)
{
  const double f = double(n - 1) / double(n);
  return kind == Kind::AllReduce ? 2 * f : f;
}

int64_t max_tree_degree(int64_t nodes)
{
  std::vector<int64_t> deg(size_t(nodes), 0);
  for_each_tree_link(nodes, [&](int64_t c, int64_t p) {
    ++deg[size_t(c)];
    ++deg[size_t(p)];
  });
  return nodes > 0 ? *std::max_element(deg.begin(), deg.end()) : 0;
}

void ring_flows(const std::vector<int64_t>& ring, double each, std::vector<Flow>& flows)
{
  for (size_t i = 0; i < ring.size(); ++i)
    flows.push_back({ring[i], ring[(i + 1) % ring.size()], each});
}

void tree_flows(const MembersByNode& by_node, const GroupShape& g, double nic_bytes, std::vector<Flow>& flows)
{
  const int64_t k = g.per_node();
  const double each = nic_bytes / double(max_tree_degree(g.nodes));
  for_each_tree_link(g.nodes, [&](int64_t c, int64_t p) {
    for (int64_t l = 0; l < k; ++l) {
      flows.push_back({by_node[size_t(c)][size_t(l)], by_node[size_t(p)][size_t(l)], each});
      flows.push_back({by_node[size_t(p)][size_t(l)], by_node[size_t(c)][size_t(l)], each});
    }
  });
}

bool nvls_node(const GroupShape& g) { return g.nvls_enabled && g.nvswitch_generation >= 3; }

double nvls_efficiency(const GroupShape& g) { return g.nvswitch_generation >= 4 ? 0.74 : 0.85; }

}  // namespace dtsim::collectives
