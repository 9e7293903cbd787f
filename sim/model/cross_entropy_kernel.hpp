#pragma once
/// The kernels that run the language-model loss over the vocabulary-parallel logits: a choice of the software
/// (the stack's kernels.cross_entropy, the scenario's training.cross_entropy) that sets the bytes the loss moves
/// (model::Transformer::head).

namespace dtsim::model {

/// Unfused: Megatron-LM's vocab_parallel_cross_entropy, one PyTorch kernel per operation on an fp32 copy of the
/// logits. FusedNative: Megatron-Core's fused_vocab_parallel_cross_entropy (cross_entropy_loss_fusion, the "native"
/// implementation: the same operations compiled into three forward kernels and one backward). FusedTe: Transformer
/// Engine's parallel_cross_entropy (cross_entropy_fusion_impl "te", a Triton kernel): the 16-bit logits read twice
/// and overwritten by their gradient.
enum class CrossEntropyKernel { Unfused, FusedNative, FusedTe };

}  // namespace dtsim::model
