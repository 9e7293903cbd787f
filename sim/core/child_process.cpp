#include "core/child_process.hpp"

#include <poll.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include <cstdio>
#include <cstdint>
#include <iostream>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace dtsim {

namespace {

struct Child {
  pid_t pid = -1;
  int fd = -1;
};

Child spawn(const std::function<Bytes()>& work)
{
  int fd[2];
  if (pipe(fd) != 0)
    return {};
  std::fflush(stdout);
  std::cout.flush();
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    // A child dies with its parent: a sweep, search or compare killed alone (`kill PID`, SIGKILL, the out-of-memory
    // killer) leaves no simulation running on, writing rows where a resumed sweep now works. Linux's
    // PR_SET_PDEATHSIG (prctl(2)); the parent may have died before the call, hence the check after it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
      _exit(1);
    close(fd[0]);
    int code = 1;
    try {
      const Bytes out = work();
      const uint64_t n = out.size();
      bool ok = write(fd[1], &n, sizeof n) == ssize_t(sizeof n);
      for (size_t sent = 0; ok && sent < n;) {  // a pipe takes a large record in several writes
        const ssize_t w = write(fd[1], out.data() + sent, n - sent);
        ok = w > 0;
        sent += ok ? size_t(w) : 0;
      }
      code = ok ? 0 : 1;
    } catch (const std::exception& e) {
      std::cerr << e.what() << "\n";
    }
    _exit(code);
  }
  close(fd[1]);
  if (pid < 0) {
    close(fd[0]);
    return {};
  }
  return {pid, fd[0]};
}

std::optional<Bytes> collect(const Child& c, ChildUsage* usage = nullptr)
{
  if (c.pid < 0)
    return std::nullopt;
  uint64_t n = 0;
  Bytes out;
  bool ok = read(c.fd, &n, sizeof n) == ssize_t(sizeof n) && n < (uint64_t(1) << 30);
  if (ok) {
    out.resize(n);
    size_t got = 0;
    while (ok && got < n) {
      ssize_t r = read(c.fd, out.data() + got, n - got);
      ok = r > 0;
      got += ok ? size_t(r) : 0;
    }
  }
  close(c.fd);
  int status = 0;
  struct rusage ru {};
  wait4(c.pid, &status, 0, &ru);
  if (usage) {
    usage->user_cpu_s = double(ru.ru_utime.tv_sec) + 1e-6 * double(ru.ru_utime.tv_usec);
    usage->system_cpu_s = double(ru.ru_stime.tv_sec) + 1e-6 * double(ru.ru_stime.tv_usec);
    usage->peak_rss_bytes = int64_t(ru.ru_maxrss) * 1024;  // Linux reports kilobytes
  }
  if (!ok || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return std::nullopt;
  return out;
}

// Numbers travel as their bytes: parent and child are the same program on the same machine.
std::function<Bytes()> sending_numbers(const std::function<std::vector<double>()>& work)
{
  return [work]() {
    const std::vector<double> v = work();
    const auto* p = reinterpret_cast<const uint8_t*>(v.data());
    return Bytes(p, p + v.size() * sizeof(double));
  };
}

std::optional<std::vector<double>> numbers(const std::optional<Bytes>& bytes)
{
  if (!bytes || bytes->size() % sizeof(double) != 0)
    return std::nullopt;
  std::vector<double> v(bytes->size() / sizeof(double));
  std::memcpy(v.data(), bytes->data(), bytes->size());
  return v;
}

}  // namespace

std::optional<Bytes> run_in_child_bytes(const std::function<Bytes()>& work) { return collect(spawn(work)); }

std::optional<std::vector<double>> run_in_child(const std::function<std::vector<double>()>& work)
{
  return numbers(collect(spawn(sending_numbers(work))));
}

std::optional<std::vector<double>> run_in_child(const std::function<std::vector<double>()>& work, ChildUsage* usage)
{
  return numbers(collect(spawn(sending_numbers(work)), usage));
}

std::vector<std::optional<std::vector<double>>> run_in_children(
    const std::vector<std::function<std::vector<double>()>>& jobs, int workers,
    const std::function<void(size_t)>& on_done)
{
  std::vector<std::function<Bytes()>> sending;
  for (const auto& job : jobs)
    sending.push_back(sending_numbers(job));
  std::vector<std::optional<std::vector<double>>> results;
  for (const auto& bytes : run_in_children_bytes(sending, workers, on_done))
    results.push_back(numbers(bytes));
  return results;
}

std::vector<std::optional<Bytes>> run_in_children_bytes(const std::vector<std::function<Bytes()>>& jobs, int workers,
                                                        const std::function<void(size_t)>& on_done)
{
  std::vector<std::optional<Bytes>> results(jobs.size());
  std::vector<std::pair<size_t, Child>> running;
  size_t next = 0, finished = 0;
  while (next < jobs.size() || !running.empty()) {
    while (next < jobs.size() && int(running.size()) < std::max(1, workers)) {
      running.push_back({next, spawn(jobs[next])});
      ++next;
    }
    // Collect whichever child has finished (its pipe readable: a result, or end of file), so that a slow child does
    // not keep a finished one's slot idle (collecting the oldest first left up to a fifth of a search's two
    // cores idle). Results stay in job order whatever order the children end in.
    size_t ready = 0;
    std::vector<pollfd> fds;
    bool any = false;
    for (size_t k = 0; k < running.size(); ++k) {
      fds.push_back({running[k].second.fd, POLLIN, 0});
      if (running[k].second.fd < 0 && !any) {  // it could not be started: nothing to wait for
        ready = k;
        any = true;
      }
    }
    while (!any) {
      if (poll(fds.data(), nfds_t(fds.size()), -1) < 0 && errno != EINTR)
        break;  // cannot wait: collect the oldest, which blocks until it ends
      for (size_t k = 0; k < fds.size() && !any; ++k)
        if (fds[k].revents != 0) {
          ready = k;
          any = true;
        }
    }
    auto [index, child] = running[ready];
    running.erase(running.begin() + std::ptrdiff_t(ready));
    results[index] = collect(child);
    if (on_done)
      on_done(++finished);
  }
  return results;
}

}  // namespace dtsim
