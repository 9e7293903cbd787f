#include "parallel/precision.hpp"

namespace dtsim::parallel {

Precision precision_of(const std::string& name)
{
  Precision p;
  p.name = name;
  if (name == "fp32") {
    p.activation_bytes = p.weight_bytes = p.gradient_bytes = 4;
    p.optimizer_bytes_per_param = 8;
  }
  // bf16, fp16 and fp8 keep the 16-bit defaults; fp8 only changes the linear layers' GEMM inputs.
  p.fp8_linear = name == "fp8";
  return p;
}

}  // namespace dtsim::parallel
