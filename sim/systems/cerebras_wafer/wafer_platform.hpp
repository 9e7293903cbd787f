#pragma once
/// The SimGrid platform of wafer-scale systems, built in code from the hardware description:
///  - each system is a zone holding a grid of tile hosts joined by split-duplex mesh links (each the tile edge's
///    share of the fabric bandwidth) and an edge gateway; the wafer's I/O enters through one port link per
///    column along the north edge (the I/O bandwidth spread over the columns), and routes follow dimension order;
///  - MemoryX, the SwarmX switches and the systems form a tree: each tree edge is a link of its own, so a
///    broadcast sends each weight over each edge once and a reduction receives each gradient once per edge.
#include <cstdint>
#include <vector>

#include "hardware/hardware_spec.hpp"

namespace simgrid::s4u {
class Host;
}

namespace dtsim::wafer {

class WaferPlatform {
 public:
  WaferPlatform(const hardware::HardwareSpec& hw, int64_t systems);

  int rows() const { return rows_; }
  int cols() const { return cols_; }
  simgrid::s4u::Host* tile(int64_t system, int r, int c) const;
  simgrid::s4u::Host* memoryx() const { return memoryx_; }

  /// A tree edge: data goes down from `parent` to `child` (a switch's up side, or a system's tile through its
  /// port), up the other way.
  struct Edge {
    simgrid::s4u::Host* parent = nullptr;
    simgrid::s4u::Host* child = nullptr;  ///< nullptr for a system's leaf edge: flows end on the tiles
    int64_t system = -1;                  ///< the system a leaf edge feeds, -1 for switch edges
  };
  const std::vector<Edge>& edges() const { return edges_; }
  /// The host that sends to a system over its leaf edge.
  simgrid::s4u::Host* parent_of(int64_t system) const { return parent_of_[size_t(system)]; }
  int levels() const { return levels_; }
  int64_t link_count() const { return links_; }

 private:
  int rows_, cols_;
  std::vector<std::vector<simgrid::s4u::Host*>> tiles_;  // [system][r * cols + c]
  std::vector<Edge> edges_;
  std::vector<simgrid::s4u::Host*> parent_of_;
  simgrid::s4u::Host* memoryx_ = nullptr;
  int levels_ = 0;
  int64_t links_ = 0;
};

}  // namespace dtsim::wafer
