#include "systems/cerebras_wafer/core_gemm.hpp"

#include <algorithm>

namespace dtsim::wafer {

double reduction_per_core(const model::Op& gemm, double cores)
{
  // Rows of the resident operand: with at least one per core, each core holds whole rows and works through all
  // k of them; with fewer, each row's k is split over cores / rows cores.
  const double rows = gemm.batch * gemm.m;
  return gemm.k * std::min(1.0, rows / cores);
}

double core_gemm_efficiency(const model::Op& gemm, const systems::WaferSpec& w)
{
  const double v = reduction_per_core(gemm, double(w.cores));
  return w.gemm_max_efficiency * v / (v + w.gemm_half_length);
}

}  // namespace dtsim::wafer
