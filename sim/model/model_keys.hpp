#pragma once
/// Every key of a model file (models/*.yaml, or a Hugging Face config.json as it is) that dtsim reads, declared once
/// (config/key.hpp): model_yaml.cpp reads through these declarations, its "did you mean" list for a config.json's
/// other keys is their names, and docs/yaml-reference.md's model table is generated from them.
#include <string>
#include <vector>

#include "config/key.hpp"

namespace dtsim::model::keys {

using config::Key;

extern const Key kModelType, kHiddenAct, kHiddenSize, kNumHiddenLayers, kNumAttentionHeads, kVocabSize;
extern const Key kMaxPositionEmbeddings, kIntermediateSize, kNumKeyValueHeads, kHeadDim, kTieWordEmbeddings;
extern const Key kRoutedExperts, kExpertsPerToken, kMoeIntermediateSize, kSharedExperts, kSharedExpertWidth;
extern const Key kFirstKDenseReplace, kMoeLayerFreq, kDecoderSparseStep, kMlpOnlyLayers, kNGroup, kTopkGroup;
extern const Key kKvLoraRank, kQLoraRank, kQkNopeHeadDim, kQkRopeHeadDim, kVHeadDim;
extern const Key kConditioningOutputs;

/// Every declared key, in the reference's order.
const std::vector<const Key*>& all();

/// Every name a declared key goes by (its name and its aliases): the keys a config.json's other keys are held
/// against for "did you mean".
std::vector<std::string> read_names();

/// The keys for the reference.
std::vector<config::KeyGroup> groups();

}  // namespace dtsim::model::keys
