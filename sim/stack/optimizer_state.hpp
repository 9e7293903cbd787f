#pragma once
/// How the Adam optimizer holds its states per parameter, beside the model's 16-bit weights and gradients: the
/// stack's `memory.optimizer_state`, the scenario's `training.optimizer_state`.
#include <string>
#include <vector>

namespace dtsim::stack {

/// Fp32: an fp32 master copy, momentum and variance, 12 bytes (Rajbhandari et al. 2019, Sec. 3.1; Megatron-LM's
/// distributed optimizer, PyTorch AdamW). Fp32Remainders: momentum and variance in fp32 and only the low 16 bits of
/// the master copy, whose high 16 bits are the bf16 weight itself, 10 bytes (Apex DistributedFusedAdam with
/// store_param_remainders, which NeMo turns on for a bf16 model with fp32 optimizer states:
/// nemo/collections/nlp/models/language_modeling/megatron_base_model.py, setup_optimization, NeMo r2.0.0rc1).
/// Bf16: momentum and variance in bf16 and no master copy, 4 bytes (the same NeMo code: optimizer dtype equal to
/// the model's sets store_params False).
enum class OptimizerState { Fp32, Fp32Remainders, Bf16 };

/// The YAML names, in enum order.
const std::vector<std::string>& optimizer_state_names();
/// The state of a name from that list (a name the YAML reader has already checked).
OptimizerState optimizer_state_named(const std::string& name);
const char* to_string(OptimizerState s);

/// Bytes per parameter the optimizer holds. `fp32_weights`: the weights themselves are fp32 (precision fp32), so
/// no master copy exists: 8 bytes for fp32 momentum and variance, 4 for bf16.
double optimizer_state_bytes(OptimizerState s, bool fp32_weights);

/// Of those, momentum and variance: 8 bytes in fp32, 4 in bf16 (the master copy or its remainders excluded). Adam
/// makes them at its first step (torch.optim.AdamW's _init_group fills an empty state with zeros_like).
double optimizer_moment_bytes(OptimizerState s);

}  // namespace dtsim::stack
