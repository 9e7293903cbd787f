#include "collectives/channel_caps.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

namespace dtsim::collectives {

namespace {

// The GPU generation NCCL's tables are indexed by (compCapIndex), from the NVSwitch that ships with it: -1 unknown.
int generation_index(const GroupShape& g)
{
  if (g.nvswitch_generation >= 4)
    return 2;  // Blackwell
  if (g.nvswitch_generation == 3)
    return 1;  // Hopper
  if (g.nvswitch_generation == 2)
    return 0;  // Ampere
  return -1;
}

// src/graph/search.cc at 5067397c: the per-channel speeds the intra-node search tries, GB/s, fastest first
// (speedArrayIntra for compute capability below 9.0, sm90SpeedArrayIntra, sm100SpeedArrayIntra).
const std::vector<double>& intra_speeds(int generation)
{
  static const std::vector<double> ampere{40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0};
  static const std::vector<double> hopper{60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
  static const std::vector<double> blackwell{90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0};
  return generation == 2 ? blackwell : generation == 1 ? hopper : ampere;
}

// src/include/device.h MAXCHANNELS 64; src/init.cc: ringGraph->maxChannels = MAXCHANNELS / 2.
constexpr int kMaxGraphChannels = 32;

// ncclTopoCompute within an NVSwitch node, where every ring passes once through each GPU's link to the switch
// (`total` GB/s each way): pass 1 takes the fastest speed the link carries and as many channels as fit, going to
// slower speeds only for more bandwidth in all (and no slower than .49 of the speed found); ncclTopoDupChannels
// doubles the channels at half the speed (not below 25 GB/s, nor from Hopper on below 50 GB/s with more than 4
// channels); pass 2 raises the speed while the channels still fit.
int intra_node_channels(double total, int generation)
{
  const auto& speeds = intra_speeds(generation);
  int channels = 0;
  double speed = 0;
  for (double s : speeds) {
    if (s > total)
      continue;
    if (speed > 0 && s / speed <= 0.49)
      break;
    const int c = std::min(kMaxGraphChannels, int(std::floor(total / s)));
    if (double(c) * s > double(channels) * speed) {
      channels = c;
      speed = s;
    }
    if (double(channels) * speed >= total)
      break;
  }
  if (channels == 0)
    return 0;
  if (speed >= 25.0 && !(generation >= 1 && speed < 50.0 && channels > 4)) {
    const int doubled = std::min(2 * channels, kMaxGraphChannels);
    speed /= double((doubled + channels - 1) / channels);
    channels = doubled;
  }
  return channels;  // pass 2 keeps the channel count: only the speed per channel can rise
}

// tuning.cc at 5067397c, ncclTunerConstantsDefaults, GB/s per channel, [generation][nodes: 1, 2, more]: Ampere,
// Hopper, Blackwell rows.
using CapRow = std::array<double, 3>;
constexpr std::array<CapRow, 3> kRingLL128{{{20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}}};
constexpr std::array<CapRow, 3> kTree{{{24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}}};
constexpr std::array<CapRow, 3> kTreeLL128{{{20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}}};
// Hopper and Blackwell have no one-node entry: NCCL disables the NVLS tree within a node.
constexpr std::array<CapRow, 3> kNvlsTree{{{24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}}};

}  // namespace

int ring_graph_channels(const GroupShape& g)
{
  const int generation = generation_index(g);
  if (generation < 0 || g.ranks < 2)
    return 0;
  if (g.nodes <= 1)
    return g.nvlink_Bps > 0 ? intra_node_channels(g.nvlink_Bps / 1e9, generation) : 0;
  return int(std::min<int64_t>(kMaxGraphChannels, std::max<int64_t>(1, g.per_node())));
}

int ring_kernel_channels(const GroupShape& g)
{
  constexpr int kMaxChannels = 64;  // src/include/device.h MAXCHANNELS at 5067397c
  const int graph = ring_graph_channels(g);
  int channels = std::min(kMaxChannels, 2 * graph);
  if (g.nodes > 1 && g.nvswitch_generation >= 3 && g.nic_Bps > 45e9 && channels < 16)
    channels = std::min(kMaxChannels, 2 * channels);
  return channels;
}

double channel_cap_Bps(ChannelCap cap, const GroupShape& g)
{
  const int generation = generation_index(g);
  const int channels = ring_graph_channels(g);
  if (generation < 0 || channels == 0)
    return 0;
  const size_t nodes = g.nodes <= 2 ? size_t(std::max<int64_t>(1, g.nodes) - 1) : 2;
  const auto& table = cap == ChannelCap::RingLL128 ? kRingLL128
                      : cap == ChannelCap::Tree    ? kTree
                      : cap == ChannelCap::TreeLL128 ? kTreeLL128
                                                     : kNvlsTree;
  return double(channels) * table[size_t(generation)][nodes] * 1e9;
}

}  // namespace dtsim::collectives
