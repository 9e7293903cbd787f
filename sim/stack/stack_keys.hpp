#pragma once
/// Every key of a software-stack file (hardware/stacks/*.yaml), declared once (config/key.hpp): stack_yaml.cpp reads
/// through these declarations, and docs/yaml-reference.md's stack table is generated from them.
#include <vector>

#include "config/key.hpp"

namespace dtsim::stack::keys {

using config::Key;

extern const Key kName, kFramework, kVersion, kNccl, kDescription;
extern const Key kKernels, kAttention, kFp8Recipe, kCrossEntropy, kCudaGraphs, kLossAllReduce, kContextParallel,
    kTpOverlapKernels, kUbGatherCopy, kZeroGradients, kOptimizerStepBytes;
extern const Key kHost, kLaunch, kPerLayer, kPerMicrobatch, kSyncResume, kExpertGemm;
extern const Key kMemory, kCudaContext, kNcclBuffers, kFragmentation, kFp32Gradients, kOptimizerState, kFp8Saves16bit,
    kPipelineKeepsStageOutputs, kPipelineRecvBuffers, kPipelineKeepsLogits, kPipelineKeepsInputGrads,
    kPipelineKeepsOutputsToStepEnd, kPipelineMergesOutputs, kFsdpLayerBuffers, kFsdpGradientPool,
    kFsdpFp32ShardOnly,
    kTpSavesGatheredInputs, kLossBytesPerLogit, kLossParallelBytesPerLogit, kFinalNormBytesPerElement;
extern const Key kUbSmMargin;
extern const Key kOverlap, kTpOverlap, kDpOverlap, kPpOverlap, kPpOverlapBySchedule, kParamGatherOverlap,
    kTpAsyncAllreduce;
extern const Key kFactors, kCompute, kMemoryFactor, kCommunication, kStepOverhead;
extern const Key kCalibration, kCalibrationRuns, kHeldoutErrors;

/// The keys grouped by mapping, for the reference. The `collectives` section is the hardware file's
/// (hardware/hardware_keys.hpp); a stack's value wins.
std::vector<config::KeyGroup> groups();

}  // namespace dtsim::stack::keys
