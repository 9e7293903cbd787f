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
  // A node's links in the first tree (heap order: parent (p - 1) / 2) are its parent's and its children's; the second
  // tree mirrors the first (node x plays node nodes - 1 - x), so x's degree is the first tree's of x and of its
  // mirror. The first tree's degree changes only at x = 1 and where x's first or second child leaves the tree, so
  // the sum is constant between those points and their mirrors: the nodes next to them are the only ones to try
  // (the search and the step time groups of 16,384 nodes many times).
  auto first_tree = [nodes](int64_t x) {
    return int64_t(x > 0) + int64_t(2 * x + 1 < nodes) + int64_t(2 * x + 2 < nodes);
  };
  int64_t most = 0;
  for (int64_t change : {int64_t(0), int64_t(1), (nodes - 1) / 2, (nodes - 2) / 2})
    for (int64_t at : {change - 1, change, change + 1, nodes - 1 - change - 1, nodes - 1 - change,
                       nodes - 1 - change + 1})
      if (nodes > 1 && at >= 0 && at < nodes)
        most = std::max(most, first_tree(at) + first_tree(nodes - 1 - at));
  return most;
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
