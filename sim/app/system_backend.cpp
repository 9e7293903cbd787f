#include "app/system_backend.hpp"

namespace dtsim::app {

const SystemBackend& backend_for(const scenario::ScenarioSpec& s)
{
  return s.hardware.wafer_scale ? wafer_scale_backend() : gpu_cluster_backend();
}

void explain(std::ostream& out, const scenario::ScenarioSpec& s)
{
  backend_for(s).explain(out, s, parallel::derive_plan(s));
}

}  // namespace dtsim::app
