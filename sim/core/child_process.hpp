#pragma once
/// SimGrid allows one engine per process: to simulate several scenarios (auto mode, comparisons, validation
/// tables, plan enumeration) each one runs in a forked child that sends its result back through a pipe, as bytes
/// (a run record in CBOR) or as numbers.
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace dtsim {

/// What a child sends back: any serialized form (a run record's CBOR).
using Bytes = std::vector<uint8_t>;

/// Runs `work` in a child process and returns what it returned, or nothing when the child failed (an exception,
/// a crash). The child's stdout is flushed first so that nothing is printed twice.
std::optional<Bytes> run_in_child_bytes(const std::function<Bytes()>& work);

/// As run_in_child_bytes, for work that returns numbers.
std::optional<std::vector<double>> run_in_child(const std::function<std::vector<double>()>& work);

/// What the kernel measured of a finished child and the children it waited for (wait4's rusage).
struct ChildUsage {
  double user_cpu_s = 0;    ///< user CPU time, the child's own and its reaped children's
  double system_cpu_s = 0;
  int64_t peak_rss_bytes = 0;  ///< largest resident set of the child or of any child it reaped
};

/// As run_in_child, and fills `usage` (when not null) with what the kernel measured of the child.
std::optional<std::vector<double>> run_in_child(const std::function<std::vector<double>()>& work, ChildUsage* usage);

/// Runs the jobs in child processes, at most `workers` at a time; results in job order. `on_done`, when given, is
/// called in the parent with the number of jobs finished so far each time one finishes (for a progress line).
std::vector<std::optional<Bytes>> run_in_children_bytes(const std::vector<std::function<Bytes()>>& jobs, int workers,
                                                        const std::function<void(size_t)>& on_done = {});

/// As run_in_children_bytes, for jobs that return numbers.
std::vector<std::optional<std::vector<double>>> run_in_children(
    const std::vector<std::function<std::vector<double>()>>& jobs, int workers,
    const std::function<void(size_t)>& on_done = {});

}  // namespace dtsim
