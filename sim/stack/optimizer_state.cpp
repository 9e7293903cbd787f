#include "stack/optimizer_state.hpp"

#include <algorithm>

namespace dtsim::stack {

const std::vector<std::string>& optimizer_state_names()
{
  static const std::vector<std::string> names = {"fp32", "fp32-remainders", "bf16"};
  return names;
}

OptimizerState optimizer_state_named(const std::string& name)
{
  const auto& names = optimizer_state_names();
  return OptimizerState(std::find(names.begin(), names.end(), name) - names.begin());
}

const char* to_string(OptimizerState s) { return optimizer_state_names()[size_t(s)].c_str(); }

double optimizer_state_bytes(OptimizerState s, bool fp32_weights)
{
  switch (s) {
    case OptimizerState::Bf16:
      return 4;  // momentum and variance, 2 bytes each
    case OptimizerState::Fp32Remainders:
      return fp32_weights ? 8 : 10;  // fp32 weights need no remainder: they are the master copy
    case OptimizerState::Fp32:
      break;
  }
  return fp32_weights ? 8 : 12;
}

double optimizer_moment_bytes(OptimizerState s) { return s == OptimizerState::Bf16 ? 4 : 8; }

}  // namespace dtsim::stack
