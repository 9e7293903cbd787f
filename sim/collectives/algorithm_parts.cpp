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

void ring_member_flows(const LoneMembers& ring, int64_t i, double each, std::vector<Flow>& flows)
{
  // ring_flows lays flow i from ring[i] to ring[i + 1]: the member at i receives flow i - 1 and sends flow i, in
  // that order, but the first, which sends flow 0 and receives the last.
  const int64_t n = ring.size();
  if (n < 2 || i < 0 || i >= n)
    return;
  const int64_t in = (i + n - 1) % n;
  if (i == 0)
    flows.push_back({ring[0], ring[1], each});
  flows.push_back({ring[in], ring[i], each});
  if (i > 0)
    flows.push_back({ring[i], ring[(i + 1) % n], each});
}

namespace {

// A node's links in the first tree (heap order): its parent's and its children's.
int64_t first_tree_degree(int64_t nodes, int64_t x)
{
  return int64_t(x > 0) + int64_t(2 * x + 1 < nodes) + int64_t(2 * x + 2 < nodes);
}

}  // namespace

int64_t tree_degree(int64_t nodes, int64_t node)
{
  return first_tree_degree(nodes, node) + first_tree_degree(nodes, nodes - 1 - node);
}

int64_t first_busiest_tree_node(int64_t nodes)
{
  // The degree is constant between the change points of max_tree_degree and their mirrors, so the first node to
  // reach the most starts such a stretch: one of those points, or a node next to one.
  const int64_t most = max_tree_degree(nodes);
  int64_t first = nodes;
  for (int64_t change : {int64_t(0), int64_t(1), (nodes - 1) / 2, (nodes - 2) / 2})
    for (int64_t at : {change - 1, change, change + 1, change + 2, nodes - 1 - change - 1, nodes - 1 - change,
                       nodes - 1 - change + 1, nodes - 1 - change + 2})
      if (at >= 0 && at < first && at < nodes && tree_degree(nodes, at) == most)
        first = at;
  return first < nodes ? first : 0;
}

void tree_member_flows(const LoneMembers& members, const GroupShape& g, double nic_bytes, int64_t node,
                       std::vector<Flow>& flows)
{
  const int64_t nodes = g.nodes;
  const double each = nic_bytes / double(max_tree_degree(nodes));
  // for_each_tree_link visits p = 1..nodes-1 per tree, the link (child p, parent (p - 1) / 2), mirrored in the
  // second: node x is the child at p = x and the parent at p = 2x + 1 and 2x + 2, in that order (x < 2x + 1).
  for (int tree = 0; tree < 2; ++tree) {
    const int64_t x = tree == 0 ? node : nodes - 1 - node;
    for (int64_t p : {x, 2 * x + 1, 2 * x + 2}) {
      if (p < 1 || p >= nodes)
        continue;
      int64_t child = p, parent = (p - 1) / 2;
      if (tree == 1) {
        child = nodes - 1 - child;
        parent = nodes - 1 - parent;
      }
      const int64_t c = members[child], q = members[parent];
      flows.push_back({c, q, each});
      flows.push_back({q, c, each});
    }
  }
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

int64_t nvls_channels(const GroupShape& g) { return g.nvswitch_generation >= 4 ? 24 : 16; }

double nvls_efficiency(const GroupShape& g) { return g.nvswitch_generation >= 4 ? 0.74 : 0.85; }

}  // namespace dtsim::collectives
