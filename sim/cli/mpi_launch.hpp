#pragma once
/// What a dtsim program does about MPI before it reads its command line. Two programs share sim/cli/main.cpp and
/// differ only here: dtsim (sim/cli/mpi_handover.cpp) links no MPI library and, when mpirun started it with more than
/// one rank, replaces itself with dtsim_mpi from its own folder; dtsim_mpi (sim/cli/mpi_transport.cpp) installs
/// Open MPI as the transport of sweeps and searches across ranks (app/mpi_transport.hpp).

namespace dtsim::cli {

/// Returns 0 to go on, or the exit status of a failed hand-over (its reason printed on stderr).
int prepare_mpi(char** argv);

}  // namespace dtsim::cli
