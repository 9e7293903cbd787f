#pragma once
/// Sweeps and searches across machines: when dtsim is started by mpirun (more than one rank), the ranks split the
/// points, each rank still runs one child process per simulation on its own cores, and the results go to rank 0,
/// which alone reads and writes files and prints. The MPI calls go through the transport the program mpirun starts
/// installs (app/mpi_transport.hpp); without mpirun nothing here touches MPI. The children forked by a rank never
/// call MPI (they leave with _exit).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/child_process.hpp"

namespace dtsim::app {

/// This process's place among the MPI ranks: rank 0 of 1 when not started by mpirun.
struct MpiWorld {
  int rank = 0;
  int size = 1;
  bool root() const { return rank == 0; }
};

/// Initialises MPI the first time it is called when the environment says the process was started by mpirun with
/// more than one rank (mpi_ranks_from_environment), through the installed transport; MPI is finalized at exit.
MpiWorld mpi_world();

/// The work of one rank out of a list: the positions k with k % size == rank (deterministic, so every rank agrees).
std::vector<size_t> share_of(size_t count, const MpiWorld& w);

/// Rank 0's `values` on every rank, or nullopt on every rank when rank 0 passes nullopt (it refused the work).
std::optional<std::vector<uint64_t>> broadcast_from_root(const std::optional<std::vector<uint64_t>>& values);

/// Sends one line of text (a sweep row) from this rank to rank 0.
void send_line_to_root(const std::string& line);
/// Tells rank 0 that this rank has sent all its lines.
void send_done_to_root();

/// On rank 0: the lines other ranks sent since the last call. `wait` blocks until at least one message came.
/// Returns false once every other rank has said it is done and no line is left.
bool receive_lines(std::vector<std::string>& lines, bool wait);

/// Runs the jobs split over the ranks (share_of), each rank with `workers` child processes at a time; rank 0 gets
/// every result in job order, the other ranks an empty vector. Without mpirun: run_in_children(jobs, workers).
/// `on_done` is called as in run_in_children, for this rank's own jobs.
std::vector<std::optional<Bytes>> run_across_ranks(const std::vector<std::function<Bytes()>>& jobs, int workers,
                                                   const std::function<void(size_t)>& on_done = {});

}  // namespace dtsim::app
