// The Open MPI transport of sweeps and searches across ranks (app/mpi_transport.hpp), linked into dtsim_mpi only.
#define OMPI_SKIP_MPICXX 1  // the C interface only: no libmpi_cxx
#define MPICH_SKIP_MPICXX 1
#include <dlfcn.h>
#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

#include "app/mpi_transport.hpp"
#include "cli/mpi_launch.hpp"

namespace dtsim::cli {

namespace {

void check(int rc, const char* what)
{
  if (rc != MPI_SUCCESS)
    throw std::runtime_error(std::string("MPI: ") + what + " failed");
}

void finalize_at_exit()
{
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Finalize();
}

class OpenMpiTransport final : public app::MpiTransport {
 public:
  void start(int& rank, int& size) override
  {
    // libsimgrid also defines the MPI functions (SMPI): dtsim_mpi is linked with libmpi ahead of it.
    Dl_info where{};
    if (dladdr(reinterpret_cast<void*>(&MPI_Init_thread), &where) && where.dli_fname &&
        std::string(where.dli_fname).find("simgrid") != std::string::npos)
      throw std::runtime_error("MPI_Init_thread resolves to " + std::string(where.dli_fname) +
                               " (SimGrid's SMPI), not to the MPI library: link libmpi before libsimgrid");
    // A helper thread of the sweep talks to MPI while the main thread waits for children: one thread at a time.
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    std::atexit(finalize_at_exit);
    if (provided < MPI_THREAD_SERIALIZED)
      throw std::runtime_error("MPI: this MPI library does not allow calls from more than one thread");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }

  void broadcast_from_root(unsigned long long* values, int count) override
  {
    check(MPI_Bcast(values, count, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD), "MPI_Bcast");
  }

  void send_to_root(const void* data, int size, int tag) override
  {
    check(MPI_Send(data, size, MPI_BYTE, 0, tag, MPI_COMM_WORLD), "MPI_Send");
  }

  std::optional<Message> receive(int tag, bool wait) override
  {
    const int mpi_tag = tag < 0 ? MPI_ANY_TAG : tag;
    MPI_Status status;
    int flag = 0;
    // Waits without MPI_Probe: Open MPI's blocking calls spin on a core that the rank's own simulations (or another
    // rank's, on the same machine) need.
    for (;;) {
      check(MPI_Iprobe(MPI_ANY_SOURCE, mpi_tag, MPI_COMM_WORLD, &flag, &status), "MPI_Iprobe");
      if (flag || !wait)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!flag)
      return std::nullopt;
    int n = 0;
    MPI_Get_count(&status, MPI_BYTE, &n);
    Message m;
    m.tag = status.MPI_TAG;
    m.bytes.resize(size_t(n));
    check(MPI_Recv(m.bytes.data(), n, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
          "MPI_Recv");
    return m;
  }
};

}  // namespace

int prepare_mpi(char** /*argv*/)
{
  static OpenMpiTransport open_mpi;
  app::install_mpi_transport(open_mpi);
  return 0;
}

}  // namespace dtsim::cli
