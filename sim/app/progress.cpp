#include "app/progress.hpp"

#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace dtsim::app {

std::string duration_text(double s)
{
  char b[32];
  long t = long(s + 0.5);
  if (t >= 3600)
    std::snprintf(b, sizeof b, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else
    std::snprintf(b, sizeof b, "%ld:%02ld", t / 60, t % 60);
  return b;
}

Progress::Progress(std::ostream& log, bool quiet, uint64_t total, uint64_t done_before, std::string what,
                   std::string unit)
    : log_(log), quiet_(quiet), total_(total), before_(done_before), shown_all_(done_before), what_(std::move(what)),
      unit_(std::move(unit)), start_(Clock::now()), last_line_(start_)
{
  to_stderr_ = &log == &std::cerr || &log == &std::clog;
  tty_ = to_stderr_ && isatty(STDERR_FILENO);
}

void Progress::update(uint64_t done, bool force)
{
  if (quiet_ || total_ == 0 || (force && done == shown_))
    return;
  const auto now = Clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const uint64_t all = before_ + done;
  const double rate = elapsed > 0 ? double(done) / elapsed : 0;
  const double left = rate > 0 ? double(total_ - all) / rate : 0;
  const std::string left_text = rate > 0 ? duration_text(left) : "?:??";
  char b[320];
  if (tty_) {
    // Redrawn at most 10 times a second (searches finish hundreds of plans a second), and for the last item.
    const auto since = now - last_line_;
    if (!force && shown_ != uint64_t(-1) && all < total_ &&
        (done == shown_ ? since < std::chrono::seconds(1) : since < std::chrono::milliseconds(100)))
      return;
    const int width = 30;
    int filled = int(double(width) * double(all) / double(total_));
    std::string bar(size_t(filled), '#');
    bar += std::string(size_t(width - filled), ' ');
    std::snprintf(b, sizeof b, "\r%s [%s] %llu/%llu %s  %.2f %s/s  %s left   ", what_.c_str(), bar.c_str(),
                  (unsigned long long)all, (unsigned long long)total_, unit_.c_str(), rate, unit_.c_str(),
                  left_text.c_str());
  } else {
    const bool decile = all * 10 / total_ > shown_all_ * 10 / total_;
    if (!force && done == shown_)
      return;
    if (!force && !decile && now - last_line_ < std::chrono::seconds(10))
      return;
    std::snprintf(b, sizeof b, "%s: %llu/%llu %s (%.0f%%), %.2f %s/s, %s left\n", what_.c_str(),
                  (unsigned long long)all, (unsigned long long)total_, unit_.c_str(),
                  100.0 * double(all) / double(total_), rate, unit_.c_str(), left_text.c_str());
  }
  emit(b);
  shown_ = done;
  shown_all_ = all;
  last_line_ = now;
}

void Progress::finish()
{
  if (!quiet_ && tty_ && shown_ != uint64_t(-1))
    emit("\n");
}

// Written without the stdio locks when going to stderr: child processes are forked while this runs.
void Progress::emit(const std::string& s)
{
  if (to_stderr_) {
    ssize_t r = ::write(STDERR_FILENO, s.data(), s.size());
    (void)r;
  } else {
    log_ << s << std::flush;
  }
}

}  // namespace dtsim::app
