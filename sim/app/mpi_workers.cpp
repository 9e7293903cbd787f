#include "app/mpi_workers.hpp"

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "app/mpi_transport.hpp"
#include "core/child_process.hpp"

namespace dtsim::app {

namespace {

constexpr int kTagLine = 1, kTagDone = 2, kTagResults = 3, kAnyTag = -1;

MpiTransport* installed_transport = nullptr;

MpiTransport& transport()
{
  if (!installed_transport)
    throw std::runtime_error("MPI: no transport installed (an internal error: mpi_world() starts it first)");
  return *installed_transport;
}

int other_ranks_done = 0;

}  // namespace

void install_mpi_transport(MpiTransport& t) { installed_transport = &t; }

int mpi_ranks_from_environment()
{
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"})
    if (const char* v = std::getenv(name))
      return std::atoi(v);
  return 1;
}

MpiWorld mpi_world()
{
  static const MpiWorld world = []() {
    MpiWorld w;
    const int ranks = mpi_ranks_from_environment();
    if (ranks <= 1)
      return w;
    if (!installed_transport)
      throw std::runtime_error("started by mpirun with " + std::to_string(ranks) +
                               " ranks, but this program links no MPI library: run dtsim_mpi (dtsim hands over to "
                               "it by itself)");
    installed_transport->start(w.rank, w.size);
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
  transport().broadcast_from_root(&n, 1);
  if (n == 0)
    return std::nullopt;
  std::vector<unsigned long long> v(n - 1);
  if (w.root())
    v.assign(values->begin(), values->end());
  if (!v.empty())
    transport().broadcast_from_root(v.data(), int(v.size()));
  return std::vector<uint64_t>(v.begin(), v.end());
}

void send_line_to_root(const std::string& line)
{
  transport().send_to_root(line.data(), int(line.size()), kTagLine);
}

void send_done_to_root() { transport().send_to_root(nullptr, 0, kTagDone); }

bool receive_lines(std::vector<std::string>& lines, bool wait)
{
  const MpiWorld w = mpi_world();
  while (other_ranks_done < w.size - 1) {
    std::optional<MpiTransport::Message> m = transport().receive(kAnyTag, wait);
    if (!m)
      return true;
    wait = false;  // one message was enough; take the others that are already there
    if (m->tag == kTagDone)
      ++other_ranks_done;
    else
      lines.emplace_back(m->bytes.begin(), m->bytes.end());
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
    transport().send_to_root(packed.data(), int(packed.size()), kTagResults);
    return {};
  }
  std::vector<std::optional<Bytes>> results(jobs.size());
  for (size_t i = 0; i < mine.size(); ++i)
    results[mine[i]] = std::move(my_results[i]);
  for (int r = 1; r < w.size; ++r) {
    const Bytes packed = transport().receive(kTagResults, true)->bytes;
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
