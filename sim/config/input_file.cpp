#include "config/input_file.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace dtsim::config {

std::string input_file_problem(const std::string& path)
{
  struct stat st {};
  if (path.empty())
    return "cannot read file: the path is empty";
  if (stat(path.c_str(), &st) != 0)
    return errno == ENOENT || errno == ENOTDIR ? "cannot read file: it does not exist"
                                               : std::string("cannot read file: ") + std::strerror(errno);
  // Nothing but a regular file is opened: reading a pipe can block forever, a device can be endless.
  if (S_ISDIR(st.st_mode))
    return "cannot read file: it is a directory";
  if (S_ISFIFO(st.st_mode))
    return "cannot read file: it is a named pipe, not a regular file";
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
    return "cannot read file: it is a device, not a regular file";
  if (!S_ISREG(st.st_mode))
    return "cannot read file: it is not a regular file";
  if (st.st_size > kMaxInputBytes)
    return "cannot read file: it has " + std::to_string(st.st_size) + " bytes, more than the " +
           std::to_string(kMaxInputBytes >> 20) + " MiB an input file may have";
  return "";
}

std::string read_input_file(const std::string& path, std::string& text)
{
  std::string problem = input_file_problem(path);
  if (!problem.empty())
    return problem;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return std::string("cannot read file: ") + std::strerror(errno);
  std::ostringstream ss;
  ss << in.rdbuf();
  text = ss.str();
  return "";
}

}  // namespace dtsim::config
