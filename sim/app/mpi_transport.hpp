#pragma once
/// The few MPI calls that sweeps and searches across ranks make (app/mpi_workers.cpp), behind an interface, so that
/// only the program mpirun starts links an MPI library. dtsim_mpi installs the Open MPI one (sim/cli/mpi_transport.cpp)
/// before it parses its command line; dtsim itself links no MPI and, started by mpirun with more than one rank, hands
/// over to dtsim_mpi (sim/cli/mpi_handover.cpp). Loading Open MPI's nine libraries cost every dtsim process about
/// 12 M instructions of dynamic linking, most runs being without mpirun (docs/performance.md).
#include <optional>

#include "core/child_process.hpp"

namespace dtsim::app {

class MpiTransport {
 public:
  virtual ~MpiTransport() = default;

  /// Initialises MPI (one thread at a time may call it) and finalizes it at exit; this process's rank and the number
  /// of ranks.
  virtual void start(int& rank, int& size) = 0;
  /// Rank 0's `count` values of `values` into `values` on every rank.
  virtual void broadcast_from_root(unsigned long long* values, int count) = 0;
  /// Sends `size` bytes to rank 0 under `tag`.
  virtual void send_to_root(const void* data, int size, int tag) = 0;

  struct Message {
    int tag = 0;
    Bytes bytes;
  };
  /// The next message from any rank under `tag` (any tag when `tag` < 0). With `wait` it waits for one without
  /// spinning a core; without, nullopt when none has come.
  virtual std::optional<Message> receive(int tag, bool wait) = 0;
};

/// Makes `transport` the one mpi_world() starts when the environment says mpirun started this process with more
/// than one rank; it must outlive every sweep and search of the process.
void install_mpi_transport(MpiTransport& transport);

/// The number of ranks mpirun started, from the environment (OMPI_COMM_WORLD_SIZE, PMIX_SIZE or PMI_SIZE); 1 without.
int mpi_ranks_from_environment();

}  // namespace dtsim::app
