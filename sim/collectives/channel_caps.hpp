#pragma once
/// NCCL's channels and the caps its tuner puts on the bandwidth of each (NVIDIA/nccl at 5067397c, NCCL 2.30.7):
/// how many channels the topology search gives a ring (and the tree, which takes the ring's count), and the most
/// bus bandwidth per channel that tuning.cc's ncclTopoTuneModel allows a ring under LL128, a tree, a tree under
/// LL128 and an NVLS tree, by GPU generation and node count ("Various model refinements"). Each algorithm says
/// which of them bind it in its own entry (AlgorithmDef::bus_cap_Bps, collectives/algorithms/).
#include "collectives/algorithm_registry.hpp"

namespace dtsim::collectives {

/// NCCL's per-channel caps (tuning.cc, ncclTunerConstantsDefaults).
enum class ChannelCap {
  RingLL128,  ///< perChMaxRingLL128Bws
  Tree,       ///< perChMaxTreeBws (tree all-reduce, every protocol)
  TreeLL128,  ///< perChMaxTreeLL128Bws
  NvlsTree,   ///< perChMaxNVLSTreeBws
};

/// The ring graph's channels (graphs[RING]->nChannels, before connect.cc doubles them for the kernels): within one
/// node of a known NVSwitch generation, src/graph/search.cc's ncclTopoCompute on the device's NVLink goodput; across
/// nodes one per member of a node, each member's NIC carrying one ring (dtsim's ring, algorithms/ring.cpp). 0 where
/// the GPU generation is not known (no NVSwitch generation given): no cap then.
int ring_graph_channels(const GroupShape& g);

/// The channels the ring's kernels run on (comm->nChannels): connect.cc's ncclTopoPostset doubles the graph's
/// channels (at most MAXCHANNELS, 64), and from Hopper on doubles them again across nodes while they are fewer than
/// 16 and the graph's speed is over 45 GB/s ("4 compute channels per search channel"; the speed is the NICs' there,
/// taken as over 45 GB/s where a NIC's goodput is). 0 where the graph's count is not known.
int ring_kernel_channels(const GroupShape& g);

/// The cap on the bus bandwidth, bytes/s: the graph's channels times NCCL's per-channel figure for the group's GPU
/// generation (NVSwitch 2: Ampere, 3: Hopper, 4: Blackwell) and node count (1, 2, more); 0 where none applies.
double channel_cap_Bps(ChannelCap cap, const GroupShape& g);

}  // namespace dtsim::collectives
