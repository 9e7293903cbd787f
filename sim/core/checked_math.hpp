#pragma once
/// Integer products that cannot overflow silently: plan sizes (tp * pp * dp * cp, dp * micro_batch, ...) come
/// from the user, and a wrapped product would pass a check it should fail or divide by zero.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

namespace dtsim {

/// a * b, or nullopt when it does not fit in int64_t.
inline std::optional<int64_t> checked_mul(int64_t a, int64_t b)
{
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

/// The product of every factor, or nullopt when it (or a partial product) does not fit in int64_t.
inline std::optional<int64_t> checked_product(std::initializer_list<int64_t> factors)
{
  int64_t r = 1;
  for (int64_t f : factors)
    if (__builtin_mul_overflow(r, f, &r))
      return std::nullopt;
  return r;
}

/// A product for messages: its value, or "more than 9223372036854775807" when it overflowed.
inline std::string product_text(const std::optional<int64_t>& p)
{
  return p ? std::to_string(*p) : "more than " + std::to_string(INT64_MAX);
}

}  // namespace dtsim
