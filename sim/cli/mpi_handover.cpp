#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <system_error>

#include "app/mpi_transport.hpp"
#include "cli/mpi_launch.hpp"

namespace dtsim::cli {

// Started by mpirun, dtsim becomes dtsim_mpi in the same process (same pid and environment, so mpirun's daemon and
// the rank's MPI variables carry over) before anything else happens: Open MPI is loaded only where it is used.
int prepare_mpi(char** argv)
{
  const int ranks = app::mpi_ranks_from_environment();
  if (ranks <= 1)
    return 0;
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path partner = (ec ? std::filesystem::path(argv[0]) : self).parent_path() / "dtsim_mpi";
  execv(partner.c_str(), argv);
  std::cerr << "dtsim: started by mpirun with " << ranks << " ranks, but cannot run the MPI program "
            << partner.string() << ": " << std::strerror(errno)
            << " (it is built beside dtsim: ninja -C build dtsim_mpi)\n";
  return 1;
}

}  // namespace dtsim::cli
