#pragma once
// How much of a slow property test's sample to check: every plan the test names, or every N-th of them where the
// environment sets DTSIM_PROPERTY_SAMPLE_STRIDE=N. The sanitized build's ctest sets 4 (tests/CMakeLists.txt): the
// sanitizers make each plan 10 to 50 times slower, and the same code runs on every plan, so a strided subset still
// walks each schedule, recomputation and overlap of the sample (docs/testing.md, "The sanitized run").
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace dtsim::test {

/// DTSIM_PROPERTY_SAMPLE_STRIDE, 1 where unset; anything but a whole number from 1 to 1000 is an error.
inline size_t property_sample_stride()
{
  const char* text = std::getenv("DTSIM_PROPERTY_SAMPLE_STRIDE");
  if (!text)
    return 1;
  char* end = nullptr;
  const long n = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || n < 1 || n > 1000)
    throw std::invalid_argument(
        std::string("DTSIM_PROPERTY_SAMPLE_STRIDE: expected a whole number from 1 to 1000, found '") + text + "'");
  return size_t(n);
}

/// The stride a test walks its plans at: its own, times the environment's.
inline size_t sampled_stride(size_t own) { return own * property_sample_stride(); }

/// The fewest plans a test's sample must still check: its count for every plan, over the environment's stride.
inline size_t sampled_at_least(size_t whole) { return whole / property_sample_stride(); }

}  // namespace dtsim::test
