#pragma once
/// Every key of a scenario file (scenarios/*.yaml), declared once (config/key.hpp): scenario_yaml.cpp reads through
/// these declarations, and docs/yaml-reference.md's scenario table is generated from them.
#include <vector>

#include "config/key.hpp"

namespace dtsim::scenario::keys {

using config::Key;

extern const Key kName, kDescription, kModel, kHardware, kStack, kDevices;
extern const Key kParallel, kTp, kPp, kVpp, kDp, kSp, kDpOverlap, kDpBucket, kPpOverlap, kExpertTp, kEpOverlap;
extern const Key kParamGatherOverlap, kReshardAfterForward, kDeferGradientSync, kStageLayers, kTpAsyncAllreduce,
    kTpOverlap, kEp, kCp, kZero;
extern const Key kUbProjFpropMethod, kUbFc2FpropMethod, kUbProjFpropSms, kUbFc2FpropSms, kUbProjFpropSmMargin,
    kUbFc2FpropSmMargin;
extern const Key kMoeDispatcher, kMoePreprocessGraphed;
extern const Key kSchedule;
extern const Key kTraining, kGlobalBatch, kMicroBatch, kSeqLen, kExpertImbalance, kExpertCapacityFactor;
extern const Key kFlashAttention, kPrecision, kRecompute, kRecomputeLayers, kSavedActivations, kFp8Recipe,
    kCrossEntropy, kOptimizerState, kFp8Params, kFp8NormAmax;
extern const Key kGradAccumulationFusion, kTokens;
extern const Key kResilience, kCheckpointInterval, kCheckpoint, kCheckpointBandwidth, kRestart, kDeviceMtbf, kHostMtbf;
extern const Key kPlacement, kSegment;
extern const Key kSimulation, kFidelity, kWafer, kWaferMode;
extern const Key kVariability, kDeviceSpread, kKernelJitter, kSamples, kSeed;

/// The keys grouped by mapping, for the reference.
std::vector<config::KeyGroup> groups();

}  // namespace dtsim::scenario::keys
