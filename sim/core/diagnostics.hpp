#pragma once
/// User-facing error reporting: every problem found in the inputs becomes a Diagnostic that names the file,
/// the line and column (1-based), the key path from the document root, what was expected and what was found.
/// Checks collect all their diagnostics and throw them together as one ConfigError, so that a user sees every
/// mistake of a file in one pass (never a crash, never a silent default).
#include <stdexcept>
#include <string>
#include <vector>

namespace dtsim {

/// Where a value came from: a file position, or the command line (line 0).
struct Origin {
  std::string file;  ///< path as the user gave it, or "<command line>"
  int line = 0;      ///< 1-based; 0 when unknown
  int column = 0;    ///< 1-based; 0 when unknown
  std::string str() const;
};

struct Diagnostic {
  Origin where;
  std::string key_path;  ///< e.g. "parallel.tp", empty for file-level problems
  std::string message;   ///< "expected ..., got ..." plus an optional hint
  std::string str() const;  ///< "<file>:<line>:<col>: error: <key path>: <message>"
};

/// A list of diagnostics being collected by a parser or a check.
class Diagnostics {
 public:
  void add(Origin where, std::string key_path, std::string message);
  bool empty() const { return items_.empty(); }
  const std::vector<Diagnostic>& items() const { return items_; }
  void append(const Diagnostics& other);
  /// Throws ConfigError holding every diagnostic collected so far, if any.
  void throw_if_any() const;

 private:
  std::vector<Diagnostic> items_;
};

/// Throws a ConfigError of this one diagnostic: for a reader that cannot go on past the first mistake.
[[noreturn]] void throw_config_error(Origin where, std::string key_path, std::string message);

/// Prints "<file>:<line>:<col>: warning: <key path>: <message>" on stderr: something that is probably a mistake but
/// that the input format allows (an unknown key in a Hugging Face config.json close to a key dtsim reads).
void warn(const Diagnostic& d);

/// A user mistake in the inputs (exit code 2). Carries every diagnostic found.
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(std::vector<Diagnostic> items);
  const std::vector<Diagnostic>& items() const { return items_; }

 private:
  std::vector<Diagnostic> items_;
};

/// A bug in dtsim itself (an invariant broken), as opposed to a user mistake.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

}  // namespace dtsim
