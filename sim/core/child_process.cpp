#include "core/child_process.hpp"

#include <poll.h>

#include <cerrno>

#include <cstdio>
#include <cstdint>
#include <iostream>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace dtsim {

namespace {

struct Child {
  pid_t pid = -1;
  int fd = -1;
};

Child spawn(const std::function<std::vector<double>()>& work)
{
  int fd[2];
  if (pipe(fd) != 0)
    return {};
  std::fflush(stdout);
  std::cout.flush();
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    int code = 1;
    try {
      std::vector<double> out = work();
      uint64_t n = out.size();
      bool ok = write(fd[1], &n, sizeof n) == ssize_t(sizeof n) &&
                write(fd[1], out.data(), n * sizeof(double)) == ssize_t(n * sizeof(double));
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

std::optional<std::vector<double>> collect(const Child& c, ChildUsage* usage = nullptr)
{
  if (c.pid < 0)
    return std::nullopt;
  uint64_t n = 0;
  std::vector<double> out;
  bool ok = read(c.fd, &n, sizeof n) == ssize_t(sizeof n) && n < (1u << 20);
  if (ok) {
    out.resize(n);
    size_t got = 0;
    while (ok && got < n * sizeof(double)) {
      ssize_t r = read(c.fd, reinterpret_cast<char*>(out.data()) + got, n * sizeof(double) - got);
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

}  // namespace

std::optional<std::vector<double>> run_in_child(const std::function<std::vector<double>()>& work)
{
  return collect(spawn(work));
}

std::optional<std::vector<double>> run_in_child(const std::function<std::vector<double>()>& work, ChildUsage* usage)
{
  return collect(spawn(work), usage);
}

std::vector<std::optional<std::vector<double>>> run_in_children(
    const std::vector<std::function<std::vector<double>()>>& jobs, int workers,
    const std::function<void(size_t)>& on_done)
{
  std::vector<std::optional<std::vector<double>>> results(jobs.size());
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
