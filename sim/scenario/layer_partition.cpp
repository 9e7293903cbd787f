#include "scenario/layer_partition.hpp"

#include <algorithm>

#include "scenario/schedule_registry.hpp"

namespace dtsim::scenario {

std::vector<int64_t> chunk_layers(const ScenarioSpec& s)
{
  const int64_t chunks = s.parallel.pp * s.parallel.vpp;
  if (!s.parallel.stage_layers.empty())
    return s.parallel.stage_layers;
  return std::vector<int64_t>(size_t(chunks), s.model.layers / chunks);
}

int64_t chunk_index(const ScenarioSpec& s, int64_t stage, int64_t chunk)
{
  if (schedule_def(s.schedule).chunk_placement == ChunkPlacement::V)
    return chunk == 0 ? stage : 2 * s.parallel.pp - 1 - stage;
  return chunk * s.parallel.pp + stage;
}

int64_t stage_layers(const ScenarioSpec& s, int64_t stage)
{
  const auto layers = chunk_layers(s);
  int64_t n = 0;
  for (int64_t c = 0; c < s.parallel.vpp; ++c)
    n += layers[size_t(chunk_index(s, stage, c))];
  return n;
}

int64_t first_layer(const ScenarioSpec& s, int64_t vs)
{
  const auto layers = chunk_layers(s);
  int64_t n = 0;
  for (int64_t i = 0; i < vs; ++i)
    n += layers[size_t(i)];
  return n;
}

int64_t largest_chunk_layers(const ScenarioSpec& s)
{
  const int64_t chunks = s.parallel.pp * s.parallel.vpp;
  if (!s.parallel.stage_layers.empty())
    return *std::max_element(s.parallel.stage_layers.begin(), s.parallel.stage_layers.end());
  return chunks > 0 ? (s.model.layers + chunks - 1) / chunks : 0;
}

int64_t recomputed_layers(const ScenarioSpec& s, int64_t layers)
{
  if (s.training.recompute != Recompute::Full)
    return 0;
  return s.training.recompute_layers > 0 ? std::min(s.training.recompute_layers, layers) : layers;
}

int64_t stage_recomputed_layers(const ScenarioSpec& s, int64_t stage)
{
  const auto layers = chunk_layers(s);
  int64_t n = 0;
  for (int64_t c = 0; c < s.parallel.vpp; ++c)
    n += recomputed_layers(s, layers[size_t(chunk_index(s, stage, c))]);
  return n;
}

}  // namespace dtsim::scenario
