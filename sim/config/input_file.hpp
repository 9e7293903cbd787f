#pragma once
/// Reading an input file safely: the path is checked with stat() before it is opened, so that a named pipe, a
/// device (/dev/zero), a directory or an oversized file is refused with a reason instead of hanging the program or
/// filling its memory.
#include <cstdint>
#include <string>

namespace dtsim::config {

/// Largest input file read: 16 MiB. The largest shipped input (a Hugging Face config.json or a results CSV) is a
/// few hundred KiB; anything near this size is not a description of a model, a system or a plan.
inline constexpr int64_t kMaxInputBytes = int64_t(16) << 20;

/// Why `path` cannot be read as an input ("it does not exist", "it is a named pipe, not a regular file", ...);
/// empty when it is a regular file of at most kMaxInputBytes.
std::string input_file_problem(const std::string& path);

/// Reads the whole file into `text`. Returns what is wrong (as input_file_problem, or a read error), empty on
/// success.
std::string read_input_file(const std::string& path, std::string& text);

}  // namespace dtsim::config
