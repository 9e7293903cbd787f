#include "systems/cerebras_wafer/wafer_replay.hpp"

#include "core/diagnostics.hpp"
#include "replay/activities.hpp"
#include "systems/cerebras_wafer/layer_pipeline.hpp"
#include "systems/cerebras_wafer/wafer_platform.hpp"
#include "systems/cerebras_wafer/weight_streaming.hpp"

namespace dtsim::wafer {

replay::ReplayResult run_wafer_replay(const scenario::ScenarioSpec& s, const WaferProgram& p,
                                      scenario::WaferMode mode, bool record_trace)
{
  replay::Activities acts;
  WaferPlatform platform(s.hardware, s.parallel.dp);
  if (mode == scenario::WaferMode::LayerPipelined) {
    LayerPipeline lp(acts, s, p, platform, record_trace);
    acts.run([&]() { lp.start(); });
    if (!lp.done())
      throw InternalError("the layer-pipelined step did not complete");
    return lp.finish();
  }
  WeightStreaming ws(acts, s, p, platform, record_trace);
  acts.run([&]() { ws.start(); });
  if (!ws.done())
    throw InternalError("the weight-streaming step did not complete");
  return ws.finish();
}

}  // namespace dtsim::wafer
