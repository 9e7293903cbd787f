#include "platform/host_table.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <new>

namespace dtsim::platform {

HostTable::HostTable(size_t size) : size_(size), bytes_(std::max<size_t>(1, size) * sizeof(simgrid::s4u::Host*))
{
  // Private anonymous memory is zero-filled by the kernel on first touch; a null pointer is all zero bits on every
  // platform SimGrid runs on.
  void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw std::bad_alloc();
  hosts_ = static_cast<simgrid::s4u::Host**>(p);
}

HostTable::~HostTable() { munmap(hosts_, bytes_); }

}  // namespace dtsim::platform
