#include "app/simulate.hpp"

#include <chrono>

#include "hardware/compute_model.hpp"
#include "model/transformer.hpp"
#include "parallel/schedule.hpp"
#include "replay/step_program.hpp"

namespace dtsim::app {

report::RunReport simulate(const scenario::ScenarioSpec& s, bool record_trace)
{
  auto t0 = std::chrono::steady_clock::now();
  report::RunReport r;
  r.scenario = &s;
  model::Transformer t(s.model);
  r.total_params = t.total_params(s.training.seq_len);
  r.memory = parallel::estimate_memory(s, t);
  if (!r.memory.fits())
    return r;
  hardware::ComputeModel compute(s.hardware.device, s.training.precision);
  auto program = std::make_shared<const replay::StepProgram>(replay::build_step_program(s, t, compute));
  r.program = program;
  r.model_flops = program->model_flops;
  r.hardware_flops = program->hardware_flops;
  auto schedule = parallel::build_schedule(s.schedule, s.parallel.pp, s.parallel.vpp, s.microbatches);
  r.replay = replay::run_replay(s, *program, schedule, record_trace);
  r.simulated = true;
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace dtsim::app
