#include "app/mpi_workers.hpp"

#include <dlfcn.h>
#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "core/child_process.hpp"

namespace dtsim::app {

namespace {

constexpr int kTagLine = 1, kTagDone = 2, kTagResults = 3;

int ranks_from_environment()
{
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"})
    if (const char* v = std::getenv(name))
      return std::atoi(v);
  return 1;
}

void finalize_at_exit()
{
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Finalize();
}

void check(int rc, const char* what)
{
  if (rc != MPI_SUCCESS)
    throw std::runtime_error(std::string("MPI: ") + what + " failed");
}

// Waits for a message without MPI_Probe: Open MPI's blocking calls spin on a core that the rank's own simulations
// (or another rank's, on the same machine) need.
MPI_Status probe_politely(int source, int tag)
{
  MPI_Status status;
  for (int flag = 0;;) {
    check(MPI_Iprobe(source, tag, MPI_COMM_WORLD, &flag, &status), "MPI_Iprobe");
    if (flag)
      return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int other_ranks_done = 0;

}  // namespace

MpiWorld mpi_world()
{
  static const MpiWorld world = []() {
    MpiWorld w;
    if (ranks_from_environment() <= 1)
      return w;
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
    MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w.size);
    return w;
  }();
  return world;
}

std::vector<size_t> share_of(size_t count, const MpiWorld& w)
{
  std::vector<size_t> mine;
  for (size_t k = size_t(w.rank); k < count; k += size_t(w.size))
    mine.push_back(k);
  return mine;
}

std::optional<std::vector<uint64_t>> broadcast_from_root(const std::optional<std::vector<uint64_t>>& values)
{
  const MpiWorld w = mpi_world();
  if (w.size == 1)
    return values;
  // Length + 1, so that 0 says "refused".
  unsigned long long n = w.root() ? (values ? values->size() + 1 : 0) : 0;
  check(MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD), "MPI_Bcast");
  if (n == 0)
    return std::nullopt;
  std::vector<unsigned long long> v(n - 1);
  if (w.root())
    v.assign(values->begin(), values->end());
  if (!v.empty())
    check(MPI_Bcast(v.data(), int(v.size()), MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD), "MPI_Bcast");
  return std::vector<uint64_t>(v.begin(), v.end());
}

void send_line_to_root(const std::string& line)
{
  check(MPI_Send(line.data(), int(line.size()), MPI_CHAR, 0, kTagLine, MPI_COMM_WORLD), "MPI_Send");
}

void send_done_to_root() { check(MPI_Send(nullptr, 0, MPI_CHAR, 0, kTagDone, MPI_COMM_WORLD), "MPI_Send"); }

bool receive_lines(std::vector<std::string>& lines, bool wait)
{
  const MpiWorld w = mpi_world();
  while (other_ranks_done < w.size - 1) {
    MPI_Status status;
    int flag = 0;
    check(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status), "MPI_Iprobe");
    if (!flag && wait) {
      status = probe_politely(MPI_ANY_SOURCE, MPI_ANY_TAG);
      flag = 1;
    }
    if (!flag)
      return true;
    wait = false;  // one message was enough; take the others that are already there
    int n = 0;
    MPI_Get_count(&status, MPI_CHAR, &n);
    std::string text(size_t(n), '\0');
    check(MPI_Recv(text.data(), n, MPI_CHAR, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
          "MPI_Recv");
    if (status.MPI_TAG == kTagDone)
      ++other_ranks_done;
    else
      lines.push_back(std::move(text));
  }
  other_ranks_done = 0;  // ready for the next exchange
  return false;
}

std::vector<std::optional<Bytes>> run_across_ranks(const std::vector<std::function<Bytes()>>& jobs, int workers,
                                                   const std::function<void(size_t)>& on_done)
{
  const MpiWorld w = mpi_world();
  if (w.size == 1)
    return run_in_children_bytes(jobs, workers, on_done);
  const std::vector<size_t> mine = share_of(jobs.size(), w);
  std::vector<std::function<Bytes()>> my_jobs;
  for (size_t k : mine)
    my_jobs.push_back(jobs[k]);
  auto my_results = run_in_children_bytes(my_jobs, workers, on_done);
  if (!w.root()) {
    // One message: for each job that gave a result, its index and size (8 bytes each), then the result's bytes.
    Bytes packed;
    auto put = [&](uint64_t v) {
      const auto* p = reinterpret_cast<const uint8_t*>(&v);
      packed.insert(packed.end(), p, p + sizeof v);
    };
    for (size_t i = 0; i < mine.size(); ++i)
      if (my_results[i]) {
        put(mine[i]);
        put(my_results[i]->size());
        packed.insert(packed.end(), my_results[i]->begin(), my_results[i]->end());
      }
    check(MPI_Send(packed.data(), int(packed.size()), MPI_BYTE, 0, kTagResults, MPI_COMM_WORLD), "MPI_Send");
    return {};
  }
  std::vector<std::optional<Bytes>> results(jobs.size());
  for (size_t i = 0; i < mine.size(); ++i)
    results[mine[i]] = std::move(my_results[i]);
  for (int r = 1; r < w.size; ++r) {
    MPI_Status status = probe_politely(MPI_ANY_SOURCE, kTagResults);
    int n = 0;
    MPI_Get_count(&status, MPI_BYTE, &n);
    Bytes packed(static_cast<size_t>(n));
    check(MPI_Recv(packed.data(), n, MPI_BYTE, status.MPI_SOURCE, kTagResults, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
          "MPI_Recv");
    auto get = [&](size_t at) {
      uint64_t v = 0;
      std::memcpy(&v, packed.data() + at, sizeof v);
      return v;
    };
    for (size_t at = 0; at + 16 <= packed.size();) {
      const uint64_t index = get(at), size = get(at + 8);
      if (at + 16 + size > packed.size())
        break;
      if (index < results.size())
        results[index] = Bytes(packed.begin() + long(at + 16), packed.begin() + long(at + 16 + size));
      at += 16 + size;
    }
  }
  return results;
}

}  // namespace dtsim::app
