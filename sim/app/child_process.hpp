#pragma once
/// SimGrid allows one engine per process: to simulate several scenarios (auto mode, comparisons, validation
/// tables, plan enumeration) each one runs in a forked child that sends its numbers back through a pipe.
#include <functional>
#include <optional>
#include <vector>

namespace dtsim::app {

/// Runs `work` in a child process and returns what it returned, or nothing when the child failed (an exception,
/// a crash). The child's stdout is flushed first so that nothing is printed twice.
std::optional<std::vector<double>> run_in_child(const std::function<std::vector<double>()>& work);

/// Runs the jobs in child processes, at most `workers` at a time; results in job order. `on_done`, when given, is
/// called in the parent with the number of jobs finished so far each time one finishes (for a progress line).
std::vector<std::optional<std::vector<double>>> run_in_children(
    const std::vector<std::function<std::vector<double>()>>& jobs, int workers,
    const std::function<void(size_t)>& on_done = {});

}  // namespace dtsim::app
