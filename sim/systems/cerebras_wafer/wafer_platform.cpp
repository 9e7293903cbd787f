#include "systems/cerebras_wafer/wafer_platform.hpp"

#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/s4u.hpp>

#include "platform/cluster_platform.hpp"
#include "systems/cerebras_wafer/wafer_hardware.hpp"

namespace dtsim::wafer {

namespace sg4 = simgrid::s4u;
using Dir = sg4::LinkInRoute::Direction;

namespace {

// Adds a route and its reverse through split-duplex links; `hops` are in order from a to b.
void add_both(sg4::NetZone* z, sg4::Host* a, sg4::Host* b, const std::vector<sg4::Link*>& hops,
              const std::vector<bool>& forward_is_up)
{
  std::vector<sg4::LinkInRoute> there, back;
  for (size_t i = 0; i < hops.size(); ++i)
    there.emplace_back(hops[i], forward_is_up[i] ? Dir::UP : Dir::DOWN);
  for (size_t i = hops.size(); i-- > 0;)
    back.emplace_back(hops[i], forward_is_up[i] ? Dir::DOWN : Dir::UP);
  z->add_route(a->get_netpoint(), b->get_netpoint(), nullptr, nullptr, there, false);
  z->add_route(b->get_netpoint(), a->get_netpoint(), nullptr, nullptr, back, false);
}

}  // namespace

WaferPlatform::WaferPlatform(const hardware::HardwareSpec& hw, int64_t systems)
    : rows_(systems::wafer_hardware(hw).wafer.mesh_rows), cols_(systems::wafer_hardware(hw).wafer.mesh_cols)
{
  const auto& w = systems::wafer_hardware(hw).wafer;
  const double speed = platform::kHostSpeed;
  // The top zone holds zones only (SimGrid 3.32 numbers a zone's netpoints per zone: hosts and child zones side
  // by side in one star zone collide). Its children: the tree (MemoryX, SwarmX) and one zone per
  // system; a system's link to the centre is its leaf edge.
  auto* top = sg4::create_star_zone("wafer-cluster");
  auto* root = sg4::create_star_zone("swarmx");
  root->set_parent(top);

  // Tree: MemoryX at the top, switches of fan-out f, the systems as leaves. Every node but MemoryX owns the
  // link to its parent; a node sends downwards from a host without links, so a route parent -> child crosses the
  // child's link only.
  memoryx_ = root->create_host("memoryx", speed)->seal();
  root->add_route(memoryx_->get_netpoint(), nullptr, nullptr, nullptr, {}, true);

  // Leaves first: which parent sends to each system, and the switch levels above them.
  std::vector<int64_t> level_nodes;  // node ids of the current level; systems are 0..systems-1
  std::vector<sg4::Host*> down_host(size_t(systems), nullptr);
  struct Node {
    sg4::Host* down = nullptr;  // sends to children
    sg4::Host* up = nullptr;    // receives from the parent (owns the edge link)
    sg4::Link* edge = nullptr;
  };
  std::vector<Node> switches;
  std::vector<int64_t> parent(size_t(systems), -1);  // -1: MemoryX
  const int f = std::max(2, systems::wafer_hardware(hw).swarmx.fan_out);
  // parents of the current level, built bottom-up
  std::vector<int64_t> current;
  for (int64_t s = 0; s < systems; ++s)
    current.push_back(s);
  bool leaves = true;
  std::vector<std::pair<int64_t, int64_t>> switch_parent;  // (switch id, parent switch id or -1)
  while (current.size() > 1) {
    std::vector<int64_t> next;
    for (size_t i = 0; i < current.size(); i += size_t(f)) {
      int64_t id = int64_t(switches.size());
      Node n;
      std::string name = "swarmx" + std::to_string(id);
      n.down = root->create_host(name + "-down", speed)->seal();
      root->add_route(n.down->get_netpoint(), nullptr, nullptr, nullptr, {}, true);
      switches.push_back(n);
      switch_parent.push_back({id, -1});
      for (size_t j = i; j < std::min(current.size(), i + size_t(f)); ++j) {
        if (leaves)
          parent[size_t(current[j])] = id;
        else
          switch_parent[size_t(current[j])].second = id;
      }
      next.push_back(id);
    }
    current = next;
    leaves = false;
    ++levels_;
  }
  // Switch edges (to their parent switch, or to MemoryX).
  for (size_t i = 0; i < switches.size(); ++i) {
    auto& n = switches[i];
    const bool under_memoryx = switch_parent[i].second < 0;
    double bw = under_memoryx ? systems::wafer_hardware(hw).memoryx.bandwidth_Bps
                              : systems::wafer_hardware(hw).swarmx.port_bw_Bps;
    n.up = root->create_host("swarmx" + std::to_string(i) + "-up", speed)->seal();
    n.edge = root->create_split_duplex_link("swarmx" + std::to_string(i) + "-edge", bw)
                 ->set_latency(systems::wafer_hardware(hw).swarmx.latency_per_level_s)
                 ->seal();
    ++links_;
    root->add_route(n.up->get_netpoint(), nullptr, nullptr, nullptr, {{n.edge, Dir::UP}}, true);
    sg4::Host* p = under_memoryx ? memoryx_ : switches[size_t(switch_parent[i].second)].down;
    edges_.push_back({p, n.up, -1});
  }

  auto* tree_gw = root->create_router("swarmx-gw");
  root->add_route(tree_gw, nullptr, nullptr, nullptr, {}, true);
  root->seal();
  top->add_route(root->get_netpoint(), nullptr, tree_gw, nullptr, {}, true);

  // Systems: a tile mesh each, entered through a gateway whose link to the tree is the system's leaf edge.
  tiles_.resize(size_t(systems));
  parent_of_.resize(size_t(systems));
  const double link_bw = w.tile_link_bw_Bps();
  const double port_bw = w.io_bw_Bps / double(cols_);
  for (int64_t s = 0; s < systems; ++s) {
    const std::string sys = "wafer" + std::to_string(s);
    auto* z = sg4::create_full_zone(sys);
    z->set_parent(top);
    auto& t = tiles_[size_t(s)];
    for (int r = 0; r < rows_; ++r)
      for (int c = 0; c < cols_; ++c)
        t.push_back(z->create_host(sys + "-tile" + std::to_string(r) + "-" + std::to_string(c), speed)->seal());
    auto* gw = z->create_host(sys + "-io", speed)->seal();
    auto mk = [&](const std::string& name, double bw) {
      ++links_;
      return z->create_split_duplex_link(name, bw)->set_latency(w.hop_latency_s)->seal();
    };
    std::vector<std::vector<sg4::Link*>> east(static_cast<size_t>(rows_)), south(static_cast<size_t>(rows_));
    for (int r = 0; r < rows_; ++r)
      for (int c = 0; c < cols_; ++c) {
        if (c + 1 < cols_)
          east[size_t(r)].push_back(mk(sys + "-e" + std::to_string(r) + "-" + std::to_string(c), link_bw));
        if (r + 1 < rows_)
          south[size_t(r)].push_back(mk(sys + "-s" + std::to_string(r) + "-" + std::to_string(c), link_bw));
      }
    auto at = [&](int r, int c) { return t[size_t(r * cols_ + c)]; };
    // neighbours (layer-pipelined hand-offs)
    for (int r = 0; r < rows_; ++r)
      for (int c = 0; c < cols_; ++c) {
        if (c + 1 < cols_)
          add_both(z, at(r, c), at(r, c + 1), {east[size_t(r)][size_t(c)]}, {true});
        if (r + 1 < rows_)
          add_both(z, at(r, c), at(r + 1, c), {south[size_t(r)][size_t(c)]}, {true});
      }
    // rows end to end (activation exchange along a row), when longer than one hop
    for (int r = 0; r < rows_ && cols_ > 2; ++r)
      add_both(z, at(r, 0), at(r, cols_ - 1), east[size_t(r)], std::vector<bool>(east[size_t(r)].size(), true));
    // I/O: one port per column on the north edge, then down the column (dimension order)
    for (int c = 0; c < cols_; ++c) {
      std::vector<sg4::Link*> hops{mk(sys + "-port" + std::to_string(c), port_bw)};
      for (int r = 0; r + 1 < rows_; ++r)
        hops.push_back(south[size_t(r)][size_t(c)]);
      add_both(z, gw, at(rows_ - 1, c), hops, std::vector<bool>(hops.size(), true));
    }
    z->seal();
    sg4::Host* p = parent[size_t(s)] < 0 ? memoryx_ : switches[size_t(parent[size_t(s)])].down;
    // One system talks to MemoryX directly; several through SwarmX ports.
    double leaf_bw = parent[size_t(s)] < 0 ? systems::wafer_hardware(hw).memoryx.bandwidth_Bps
                                           : systems::wafer_hardware(hw).swarmx.port_bw_Bps;
    auto* leaf = top->create_split_duplex_link(sys + "-leaf", leaf_bw)
                     ->set_latency(parent[size_t(s)] < 0 ? w.io_latency_s
                                                         : systems::wafer_hardware(hw).swarmx.latency_per_level_s)
                     ->seal();
    ++links_;
    top->add_route(z->get_netpoint(), nullptr, gw->get_netpoint(), nullptr, {{leaf, Dir::UP}}, true);
    parent_of_[size_t(s)] = p;
    edges_.push_back({p, nullptr, s});
  }
  top->seal();
}

sg4::Host* WaferPlatform::tile(int64_t system, int r, int c) const
{
  return tiles_[size_t(system)][size_t(r * cols_ + c)];
}

}  // namespace dtsim::wafer
