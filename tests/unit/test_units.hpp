#pragma once
/// Units that the unit tests write their figures in.

namespace dtsim::test {

constexpr double kUs = 1e-6;       ///< a microsecond, in seconds
constexpr double MiB = 1048576.0;  ///< bytes

}  // namespace dtsim::test
