#include "systems/cerebras_wafer/micro_batch.hpp"

#include "config/units.hpp"
#include "model/transformer.hpp"
#include "parallel/plan.hpp"
#include "systems/cerebras_wafer/wafer_hardware.hpp"
#include "systems/cerebras_wafer/wafer_program.hpp"

namespace dtsim::wafer {

using scenario::WaferMode;

namespace {

// On-wafer SRAM the scenario needs with `micro_batch` samples per pass (MemoryX does not depend on it).
double sram_needed(scenario::ScenarioSpec s, int64_t micro_batch, WaferMode mode)
{
  s.training.micro_batch = micro_batch;
  s.microbatches = s.training.global_batch / (s.parallel.dp * micro_batch);
  const model::Transformer t(s.model);
  return wafer_memory(s, parallel::derive_plan(s), t, mode).sram_total();
}

}  // namespace

std::string MicroBatchChoice::reason(scenario::Recompute recompute) const
{
  using config::Dimension;
  using config::format_quantity;
  const std::string where = " in " + format_quantity(capacity_bytes, Dimension::Bytes) + " of on-wafer SRAM (" +
                            scenario::to_string(sized_for) + ", recompute " + scenario::to_string(recompute) + ")";
  const std::string per_system = std::to_string(system_batch) + " samples per system";
  if (!fits)
    return "auto: none fits" + where + ": micro batch 1 needs " + format_quantity(sram_bytes, Dimension::Bytes);
  std::string r = "auto: the largest divisor of " + per_system + " that fits" + where + ", needs " +
                  format_quantity(sram_bytes, Dimension::Bytes);
  if (next_micro_batch > 0)
    r += "; " + std::to_string(next_micro_batch) + " would need " + format_quantity(next_sram_bytes, Dimension::Bytes);
  return r;
}

MicroBatchChoice choose_micro_batch(const scenario::ScenarioSpec& s)
{
  MicroBatchChoice c;
  c.sized_for = s.wafer_mode == WaferMode::LayerPipelined ? WaferMode::LayerPipelined : WaferMode::WeightStreaming;
  c.system_batch = s.training.global_batch / s.parallel.dp;
  c.capacity_bytes = systems::wafer_hardware(s.hardware).wafer.sram_bytes;
  c.sram_bytes = sram_needed(s, 1, c.sized_for);
  c.fits = c.sram_bytes <= c.capacity_bytes;
  if (!c.fits)
    return c;
  // SRAM grows with the micro batch (activations are per sample), so the divisors that fit come first.
  for (int64_t d = 2; d <= c.system_batch; ++d) {
    if (c.system_batch % d != 0)
      continue;
    const double need = sram_needed(s, d, c.sized_for);
    if (need > c.capacity_bytes) {
      c.next_micro_batch = d;
      c.next_sram_bytes = need;
      break;
    }
    c.micro_batch = d;
    c.sram_bytes = need;
  }
  return c;
}

void resolve_micro_batch(scenario::ScenarioSpec& s)
{
  if (!s.training.micro_batch_auto)
    return;
  const MicroBatchChoice c = choose_micro_batch(s);
  s.training.micro_batch = c.micro_batch;
  s.microbatches = s.training.global_batch / (s.parallel.dp * c.micro_batch);
  s.training.micro_batch_reason = c.reason(s.training.recompute);
}

}  // namespace dtsim::wafer
