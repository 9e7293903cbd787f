#include "stack/stack_yaml.hpp"

#include "config/map_reader.hpp"
#include "hardware/hardware_yaml.hpp"

namespace dtsim::stack {

using config::Dimension;
using config::MapReader;
namespace limits = config::limits;

StackSpec load_stack(const std::string& path, Diagnostics& diag)
{
  StackSpec st;
  st.file = path;
  auto file = config::YamlFile::load(path, diag);
  if (!file.ok())
    return st;
  MapReader root(file, file.root(), "", diag);
  st.name = root.string("name", true).value_or("");
  st.framework = root.string("framework", false).value_or("");
  st.version = root.string("version", false).value_or("");
  root.accept({"description"});

  MapReader kernels = root.map("kernels", false);
  if (auto a = kernels.choice("attention", {"unfused", "flash-attention-2", "flash-attention-3", "cudnn"}, false)) {
    st.attention = *a == "flash-attention-2"   ? AttentionKernel::FlashAttention2
                   : *a == "flash-attention-3" ? AttentionKernel::FlashAttention3
                   : *a == "cudnn"             ? AttentionKernel::CuDnn
                                               : AttentionKernel::Unfused;
    st.attention_given = st.attention != AttentionKernel::Unfused;
  }
  st.fp8_recipe = fp8_recipe_named(kernels.choice("fp8_recipe", fp8_recipe_names(), false).value_or("delayed"));
  st.cross_entropy =
      cross_entropy_named(kernels.choice("cross_entropy", cross_entropy_names(), false).value_or("unfused"));
  st.cuda_graphs = kernels.boolean("cuda_graphs", false).value_or(false);
  kernels.finish();

  MapReader host = root.map("host", false);
  st.host.launch_s = host.quantity("launch", Dimension::Time, false, limits::kLatency).value_or(0);
  st.host.per_layer_s = host.quantity("per_layer", Dimension::Time, false, limits::kLatency).value_or(0);
  st.host.per_microbatch_s = host.quantity("per_microbatch", Dimension::Time, false, limits::kLatency).value_or(0);
  host.finish();

  MapReader mem = root.map("memory", false);
  st.memory.cuda_context_bytes = mem.quantity("cuda_context", Dimension::Bytes, false, limits::kReserved).value_or(0);
  st.memory.nccl_buffer_bytes = mem.quantity("nccl_buffers", Dimension::Bytes, false, limits::kReserved).value_or(0);
  st.memory.fragmentation = mem.number("fragmentation", false, 0.0, 0.5).value_or(0);
  st.memory.fp32_gradients = mem.boolean("fp32_gradients", false).value_or(false);
  mem.finish();

  MapReader ov = root.map("overlap", false);
  st.overlap.tp_overlap = ov.boolean("tp_overlap", false);
  st.overlap.dp_overlap = ov.boolean("dp_overlap", false);
  st.overlap.pp_overlap = ov.boolean("pp_overlap", false);
  st.overlap.param_gather_overlap = ov.boolean("param_gather_overlap", false);
  st.overlap.tp_async_allreduce = ov.boolean("tp_async_allreduce", false);
  ov.finish();

  // Factors multiply modelled speeds: 0.5 halves a throughput, 2 doubles it. Outside [0.05, 20] a factor no longer
  // corrects a model, it replaces it.
  MapReader f = root.map("factors", false);
  st.factors.compute = f.number("compute", false, 0.05, 20).value_or(1.0);
  st.factors.memory = f.number("memory", false, 0.05, 20).value_or(1.0);
  st.factors.communication = f.number("communication", false, 0.05, 20).value_or(1.0);
  st.factors.step_overhead_s = f.quantity("step_overhead", Dimension::Time, false, limits::kStepOverhead).value_or(0);
  f.finish();

  const auto force = hardware::read_collective_force(root);
  st.collective_algorithm = force.algorithm;
  st.collective_protocol = force.protocol;

  MapReader cal = root.map("calibration", false);
  st.calibration.runs = cal.integer("runs", false, limits::kCalibrationRuns).value_or(0);
  st.calibration.heldout_errors = cal.number_list("heldout_errors", false, -0.99, 100).value_or(std::vector<double>{});
  cal.finish();
  root.finish();
  return st;
}

}  // namespace dtsim::stack
