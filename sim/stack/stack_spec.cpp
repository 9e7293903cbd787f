#include "stack/stack_spec.hpp"

#include "core/diagnostics.hpp"

namespace dtsim::stack {

const char* to_string(AttentionKernel k)
{
  switch (k) {
    case AttentionKernel::Unfused: return "unfused";
    case AttentionKernel::FlashAttention2: return "flash-attention-2";
    case AttentionKernel::FlashAttention3: return "flash-attention-3";
    case AttentionKernel::CuDnn: return "cudnn";
  }
  return "?";
}

const char* to_string(Fp8Recipe r) { return fp8_recipe_names()[size_t(r)].c_str(); }

const char* to_string(CrossEntropyKernel k) { return cross_entropy_names()[size_t(k)].c_str(); }

const std::vector<std::string>& fp8_recipe_names()
{
  static const std::vector<std::string> names = {"delayed", "current"};
  return names;
}

const std::vector<std::string>& cross_entropy_names()
{
  static const std::vector<std::string> names = {"unfused", "fused-native", "fused-te"};
  return names;
}

namespace {
size_t index_in(const std::vector<std::string>& names, const std::string& name)
{
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name)
      return i;
  throw InternalError("unknown name " + name);
}
}  // namespace

Fp8Recipe fp8_recipe_named(const std::string& name) { return Fp8Recipe(index_in(fp8_recipe_names(), name)); }

CrossEntropyKernel cross_entropy_named(const std::string& name)
{
  return CrossEntropyKernel(index_in(cross_entropy_names(), name));
}

const std::vector<std::string>& factor_names()
{
  static const std::vector<std::string> names = {"compute", "communication", "memory", "step_overhead"};
  return names;
}

double factor_value(const Factors& f, const std::string& name)
{
  if (name == "compute") return f.compute;
  if (name == "memory") return f.memory;
  if (name == "communication") return f.communication;
  if (name == "step_overhead") return f.step_overhead_s;
  throw InternalError("unknown stack factor " + name);
}

void set_factor(Factors& f, const std::string& name, double value)
{
  if (name == "compute") f.compute = value;
  else if (name == "memory") f.memory = value;
  else if (name == "communication") f.communication = value;
  else if (name == "step_overhead") f.step_overhead_s = value;
  else throw InternalError("unknown stack factor " + name);
}

}  // namespace dtsim::stack
