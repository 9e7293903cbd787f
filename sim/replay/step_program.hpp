#pragma once
/// What each pipeline stage runs, step by step, for one forward or backward unit of each of its model chunks:
/// compute steps (runs of kernels timed by the device model), tensor-parallel collectives, and the points where a
/// layer's gradients become ready for the data-parallel all-reduce. Built once per scenario, shared by every
/// microbatch; pure data, no SimGrid.
#include <cstdint>
#include <string>
#include <vector>

#include "hardware/compute_model.hpp"
#include "model/transformer.hpp"
#include "scenario/scenario_spec.hpp"

namespace dtsim::replay {

struct Step {
  enum class Kind { Compute, TpCollective, GradReady };
  Kind kind = Kind::Compute;
  double seconds = 0;        ///< compute time (Compute)
  double flops = 0;          ///< hardware FLOPs of the step on one device (Compute)
  bool recompute = false;    ///< re-running a forward for activation recomputation (Compute)
  model::TpCollective collective = model::TpCollective::None;
  double bytes = 0;          ///< collective tensor size (TpCollective)
  int grad_index = 0;        ///< position in the chunk's gradient list (GradReady)
  std::string label;
};

/// Gradients of one chunk in the order backward produces them (output side first).
struct ChunkGradients {
  std::vector<double> bytes;  ///< gradient bytes per entry (a layer, the head or the embedding)
};

struct StepProgram {
  std::vector<std::vector<std::vector<Step>>> forward;   ///< [stage][chunk]
  std::vector<std::vector<std::vector<Step>>> backward;  ///< [stage][chunk]
  std::vector<std::vector<ChunkGradients>> gradients;    ///< [stage][chunk]
  std::vector<double> optimizer_seconds;                 ///< [stage]
  std::vector<double> stage_params;                      ///< [stage], per device
  double send_bytes = 0;         ///< activations (or their gradients) sent between stages per microbatch
  double model_flops = 0;        ///< whole step, all devices, recomputation not counted
  double hardware_flops = 0;     ///< whole step, all devices, recomputation counted
};

/// Bytes of Adam's update per parameter: fp32 master weights, momentum and variance read and written
/// (24 B), the 16-bit gradient read and 16-bit weights written (4 B), gradient-norm read and gradient zeroing
/// (4 B): a memory-bound pass at the device's streaming bandwidth.
constexpr double kOptimizerBytesPerParam = 32.0;

StepProgram build_step_program(const scenario::ScenarioSpec& s, const model::Transformer& t,
                               const hardware::ComputeModel& compute);

}  // namespace dtsim::replay
