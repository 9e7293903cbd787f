#pragma once
/// Progress of long work (the points of a sweep, the plans of a search) on standard error: on a terminal one line
/// redrawn in place (a bar, items done, the rate, the time left); elsewhere (a log file, CI) a plain line every 10 %
/// of the items or every 10 seconds; nothing when quiet.
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>

namespace dtsim::app {

class Progress {
 public:
  /// `total` items, of which `done_before` were done by an earlier run (a resumed sweep); `what` names the work
  /// ("sweep") and `unit` its items ("points"). Lines go to `log`; the bar is drawn only when `log` is std::cerr
  /// or std::clog and standard error is a terminal.
  Progress(std::ostream& log, bool quiet, uint64_t total, uint64_t done_before, std::string what, std::string unit);

  /// `done` items finished in this run so far; `force` prints even when nothing changed (the last line).
  void update(uint64_t done, bool force = false);

  /// Ends the terminal line.
  void finish();

 private:
  void emit(const std::string& s);

  using Clock = std::chrono::steady_clock;
  std::ostream& log_;
  bool quiet_, to_stderr_ = false, tty_ = false;
  uint64_t total_, before_, shown_ = uint64_t(-1), shown_all_ = 0;
  std::string what_, unit_;
  Clock::time_point start_, last_line_;
};

/// "m:ss", or "h:mm:ss" from an hour on.
std::string duration_text(double seconds);

}  // namespace dtsim::app
