#pragma once
/// A table of hosts indexed by device or NIC over a whole cluster, nullptr where none was built, whose memory costs
/// only the pages that hold a built host. A folded frontier step builds a few hundred of 131,072 devices and NICs:
/// a std::vector zeroed 2 MiB (callgrind's largest dp-dependent item of that step after the data-parallel folds)
/// and took a page fault for each of its 512 pages. Anonymous pages read as zero (nullptr) until first written
/// (mmap(2)), so only the pages of built hosts are ever touched. Indexing stays one load, as the replay asks for a
/// host at every flow.
#include <cstddef>

namespace simgrid::s4u {
class Host;
}

namespace dtsim::platform {

class HostTable {
 public:
  explicit HostTable(size_t size);
  ~HostTable();
  HostTable(const HostTable&) = delete;
  HostTable& operator=(const HostTable&) = delete;

  size_t size() const { return size_; }
  simgrid::s4u::Host*& operator[](size_t i) { return hosts_[i]; }
  simgrid::s4u::Host* operator[](size_t i) const { return hosts_[i]; }

 private:
  simgrid::s4u::Host** hosts_ = nullptr;
  size_t size_ = 0;
  size_t bytes_ = 0;  ///< mapped
};

}  // namespace dtsim::platform
