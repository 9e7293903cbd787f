// dtsim's Python module, native part: runs the dtsim program in a child process and hands its output back, so that a
// crash or a SimGrid abort in a simulation never takes the interpreter down, and Ctrl-C stops the simulation.
//
// The child is the program itself (the path CMake built it at, or $DTSIM_PROGRAM), in a process group of its own so
// that stopping it also stops the children it forks (sweeps, searches and compare run their points in children).
// While it runs, the interpreter keeps its signals: every 100 ms the wait lets Python check for KeyboardInterrupt.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

namespace py = pybind11;

namespace {

// Stops the child's whole process group and reaps the child; returns its wait status. Called while the child is
// not yet reaped, so that its process id still names its own group and no other.
int stop_and_reap(pid_t pid)
{
  kill(-pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// Hands each complete line of `pending` (ended by '\n' or '\r', as a progress bar redraws) to `on_line`, keeping
// the unfinished rest.
void pass_lines(std::string& pending, const py::object& on_line)
{
  size_t start = 0;
  for (size_t i = 0; i < pending.size(); ++i)
    if (pending[i] == '\n' || pending[i] == '\r') {
      if (i > start && !on_line.is_none())
        on_line(pending.substr(start, i - start));
      start = i + 1;
    }
  pending.erase(0, start);
}

// Runs argv (argv[0]: the program's path) in `cwd` ("" for the current folder). Returns (exit code, standard output
// as bytes, standard error as text); the exit code is -N when signal N ended the program. Every line of standard
// error goes to `on_line` as it comes (None: nowhere). A Python exception (Ctrl-C's KeyboardInterrupt, or one
// raised by on_line) kills the child and its children, then propagates.
py::tuple run_process(const std::vector<std::string>& argv, const py::object& on_line, const std::string& cwd)
{
  if (argv.empty())
    throw std::invalid_argument("run_process: empty argument list");
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0)
    throw std::runtime_error(std::string("run_process: pipe: ") + std::strerror(errno));
  std::vector<char*> args;
  for (const auto& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0)
    throw std::runtime_error(std::string("run_process: fork: ") + std::strerror(errno));
  if (pid == 0) {  // the child: only async-signal-safe calls until exec
    setpgid(0, 0);
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    close(out_pipe[0]), close(out_pipe[1]), close(err_pipe[0]), close(err_pipe[1]);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0)
      _exit(126);
    execv(args[0], args.data());
    const char msg[] = "dtsim: cannot run the dtsim program (set DTSIM_PROGRAM to its path)\n";
    (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
    _exit(127);
  }
  setpgid(pid, pid);  // also here: whichever runs first, the group exists before a kill
  close(out_pipe[1]), close(err_pipe[1]);
  std::string out, err, pending;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  try {
    while (open_fds > 0) {
      int ready;
      {
        py::gil_scoped_release release;
        ready = poll(fds, 2, 100);
      }
      if (PyErr_CheckSignals() != 0)
        throw py::error_already_set();
      if (ready <= 0)
        continue;
      for (int k = 0; k < 2; ++k) {
        if (fds[k].fd < 0 || !(fds[k].revents & (POLLIN | POLLHUP | POLLERR)))
          continue;
        const ssize_t n = read(fds[k].fd, buf, sizeof buf);
        if (n > 0) {
          (k == 0 ? out : err).append(buf, size_t(n));
          if (k == 1) {
            pending.append(buf, size_t(n));
            pass_lines(pending, on_line);
          }
        } else if (n == 0 || errno != EINTR) {
          close(fds[k].fd);
          fds[k].fd = -1;
          --open_fds;
        }
      }
    }
  } catch (...) {
    for (auto& f : fds)
      if (f.fd >= 0)
        close(f.fd);
    stop_and_reap(pid);
    throw;
  }
  if (!pending.empty() && !on_line.is_none())
    on_line(pending);
  {
    // Waits for the program's end without reaping it (WNOWAIT), then stops the children it left behind, if any.
    py::gil_scoped_release release;
    siginfo_t info{};
    while (waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
    }
  }
  const int status = stop_and_reap(pid);
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? -WTERMSIG(status) : -1;
  return py::make_tuple(code, py::bytes(out), py::bytes(err).attr("decode")("utf-8", "replace"));
}

}  // namespace

PYBIND11_MODULE(_native, m)
{
  m.doc() = "dtsim's native part: runs the dtsim program in a child process (see dtsim/__init__.py)";
  m.def("run_process", &run_process, py::arg("argv"), py::arg("on_line"), py::arg("cwd") = "",
        "Run argv in a child process group; return (exit code, stdout bytes, stderr text)");
  m.attr("program") = DTSIM_PROGRAM;
}
