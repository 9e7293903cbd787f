#include "replay/replay.hpp"

#include <xbt/log.h>

#include "replay/driver.hpp"

namespace dtsim::replay {

namespace {
Driver* g_driver = nullptr;
}  // namespace

ReplayResult run_replay(const scenario::ScenarioSpec& s, const StepProgram& program,
                        const parallel::PipelineSchedule& schedule, bool record_trace)
{
  int argc = 1;
  char name[] = "dtsim";
  char* argv[] = {name, nullptr};
  xbt_log_control_set("root.thresh:critical");
  sg4::Engine engine(&argc, argv);
  // RDMA-like network: latency + size / bandwidth with max-min sharing (../shared/notes/simgrid-3.32.md).
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:0");
  Driver driver(s, program, schedule, record_trace);
  g_driver = &driver;
  static bool connected = false;
  if (!connected) {
    connected = true;
    sg4::Activity::on_completion_cb([](sg4::Activity const& a) {
      if (g_driver == nullptr || a.get_state() != sg4::Activity::State::FINISHED)
        return;
      if (auto* h = a.get_data<Handler>())
        g_driver->dispatch(h);
    });
  }
  driver.start();
  engine.run();
  if (!driver.all_done())
    throw InternalError("the step did not complete: the schedule deadlocked");
  ReplayResult r = driver.finish();
  g_driver = nullptr;
  return r;
}

}  // namespace dtsim::replay
