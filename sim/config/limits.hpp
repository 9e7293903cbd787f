#pragma once
/// The declared range of every integer and physical quantity read from the inputs (docs/yaml-reference.md,
/// "Ranges"). A value outside its range is refused with file, line, key, range and value, so that nothing
/// reaches the arithmetic or SimGrid that they cannot take: every bound leaves a wide margin around the largest
/// or smallest real system, and products of bounded plan sizes are computed with checked arithmetic
/// (core/checked_math.hpp).
#include <cstdint>

namespace dtsim::config {

/// An integer range, both ends included.
struct IntRange {
  int64_t lo;
  int64_t hi;
};

/// A quantity range in SI units, both ends included; lo 0 admits zero. The texts are the bounds as messages
/// print them.
struct QuantityRange {
  double lo;
  double hi;
  const char* lo_text;
  const char* hi_text;
};

namespace limits {

// --- Plan sizes (scenario) ---
/// Devices of a scenario: 2^20 = 1,048,576 GPUs, about ten times the largest cluster trained on (about 100,000
/// GPUs in 2024). The platform holds state per device: GPT-3 175B on 2^20 devices holds 3 GB after 5 minutes
/// (measured), so 10^9 devices (which passed validate before) would need terabytes.
inline constexpr int64_t kMaxDevices = int64_t(1) << 20;
inline constexpr IntRange kDevices{1, kMaxDevices};
/// tp, pp, dp, cp and ep: each at most the devices.
inline constexpr IntRange kPlanSize{1, kMaxDevices};
/// Model chunks per pipeline stage: at most the layers of a model.
inline constexpr IntRange kVirtualStages{1, int64_t(1) << 16};
/// ZeRO stages 0 to 3 (Rajbhandari et al. 2019).
inline constexpr IntRange kZeroStage{0, 3};
/// Sequences per step: 2^24, about 4,000 times the largest published global batch (Llama 3 405B: 16M tokens,
/// 4,096 sequences); the microbatches of one pipeline are simulated one by one.
inline constexpr IntRange kGlobalBatch{1, int64_t(1) << 24};
/// Sequences per microbatch: 2^16.
inline constexpr IntRange kMicroBatch{1, int64_t(1) << 16};
/// Tokens per sequence: 2^20 (a million-token context); b * s * h products stay far below 2^63.
inline constexpr IntRange kSeqLen{1, int64_t(1) << 20};

/// Steps drawn under variability (variability.samples, `dtsim run --samples`): 10,000, each a whole replay; enough
/// for a 5th and 95th percentile to within a fraction of a percent.
inline constexpr IntRange kSamples{1, 10000};
/// Seeds of the variability draws: any non-negative 63-bit integer.
inline constexpr IntRange kSeed{0, INT64_MAX};

// --- Model shape (model files and config.json) ---
/// Hidden and head sizes: 2^20, 20 times the widest published model (hidden 53,248 is Llama 3 405B's FFN).
inline constexpr IntRange kWidth{1, int64_t(1) << 20};
/// FFN width: 2^22.
inline constexpr IntRange kFfnWidth{1, int64_t(1) << 22};
/// Layers: 2^16; the deepest published LLMs have about 130.
inline constexpr IntRange kLayers{1, int64_t(1) << 16};
/// Layers of one pipeline chunk (parallel.stage_layers): 0 to 2^16. Only the first chunk (the embedding alone) and
/// the last (the output head alone) may be empty, as Llama 3's schedule runs them (checked with the scenario).
inline constexpr IntRange kChunkLayers{0, int64_t(1) << 16};
/// Attention heads (query or key-value): 2^16.
inline constexpr IntRange kHeads{1, int64_t(1) << 16};
/// Vocabulary: 2^24, 64 times the largest published (256,000, Gemma).
inline constexpr IntRange kVocab{1, int64_t(1) << 24};
/// Positions: 2^30 (published configs go to 10M).
inline constexpr IntRange kPositions{1, int64_t(1) << 30};
/// Experts of a layer and experts per token: 2^16 (DeepSeek-V3: 256).
inline constexpr IntRange kExperts{0, int64_t(1) << 16};
/// Dense first layers of a model with experts (first_k_dense_replace): 0 to 2^16, and fewer than its layers.
inline constexpr IntRange kDenseLayers{0, int64_t(1) << 16};
/// Latent widths of multi-head latent attention (q_lora_rank, kv_lora_rank): 2^20 like kWidth (DeepSeek-V3: 1536
/// and 512); q_lora_rank may be 0 (queries projected from the hidden state, DeepSeek-V2-Lite).
inline constexpr IntRange kLatentRank{0, int64_t(1) << 20};

// --- Hardware ---
/// Devices per node, and per scale-up (NVLink) domain: 4,096; the largest announced domain is 576 (NVL576).
inline constexpr IntRange kNodeDevices{1, 4096};
/// Nodes (hosts) per scale-up domain: 1,024 (a GB200 NVL72 rack: 18 compute trays; NVL576: 144).
inline constexpr IntRange kDomainNodes{1, 1024};
inline constexpr IntRange kNvSwitchGeneration{0, 10};
/// Streaming multiprocessors per device: 4,096 (H100: 132, MI300X: 304 compute units); at least 21, so that the
/// SMs the replay takes from the compute beside communication kernels (16 for an NCCL collective, 20 for an
/// expert all-to-all: sim/replay) leave it some.
inline constexpr IntRange kSmCount{21, 4096};
/// Fat-tree levels: 1 to 3, the topologies the platform builds (docs/yaml-reference.md).
inline constexpr IntRange kTopologyLevels{1, 3};
/// Switch ports: 2 to 4,096 (the largest switch ASICs have 512 ports).
inline constexpr IntRange kSwitchRadix{2, 4096};
inline constexpr IntRange kQpsPerConnection{1, 128};
/// Cores of a wafer: 2^24 (WSE-3: 900,000).
inline constexpr IntRange kWaferCores{1, int64_t(1) << 24};
/// Rows or columns of the wafer's region mesh: 4,096.
inline constexpr IntRange kMeshSide{1, 4096};
/// SwarmX fan-out: 2 to 1,024.
inline constexpr IntRange kFanOut{2, 1024};
/// Calibration runs recorded in a stack.
inline constexpr IntRange kCalibrationRuns{0, int64_t(1) << 20};

// --- Quantities (SI units) ---
/// Memory capacities (device HBM, wafer SRAM, MemoryX): 1 MiB to 1 EiB; MemoryX goes to 1.2 PB.
inline constexpr QuantityRange kCapacity{1048576.0, 1152921504606846976.0, "1 MiB", "1 EiB"};
/// Memory set aside by software (CUDA context, NCCL buffers): 0 to 1 TiB.
inline constexpr QuantityRange kReserved{0, 1099511627776.0, "0 B", "1 TiB"};
/// Gradient bucket: 1 KiB to 1 TiB (PyTorch DDP's default is 25 MiB); smaller buckets would mean billions of
/// collectives per step.
inline constexpr QuantityRange kBucket{1024.0, 1099511627776.0, "1 KiB", "1 TiB"};
/// Bandwidths of links and memories: 1 MB/s (slower than 10 Mb/s Ethernet) to 10^18 B/s (the CS-2 fabric is
/// 27.5 PB/s). Far below the lower bound SimGrid's solver loses precision.
inline constexpr QuantityRange kBandwidth{1e6, 1e18, "1 MB/s", "1000 PB/s"};
/// Peak compute of one device: 1 GFLOP/s to 10^18 FLOP/s (a CS-3 wafer: 125 PFLOP/s published sparse peak).
inline constexpr QuantityRange kFlopRate{1e9, 1e18, "1 GFLOP/s", "1000 PFLOP/s"};
/// Latencies of links, hops and kernels: 0 to 1 s, 10^5 times any measured network latency.
inline constexpr QuantityRange kLatency{0, 1.0, "0 s", "1 s"};
/// Host time added per step: 0 to 1 hour.
inline constexpr QuantityRange kStepOverhead{0, 3600.0, "0 s", "3600 s"};
/// Power of a device or system: 1 W to 1 MW (a CS-3 draws about 23 kW).
inline constexpr QuantityRange kPower{1.0, 1e6, "1 W", "1 MW"};
/// Tokens of a whole training run: up to 10^17, thousands of times the largest published (Llama 3: 15.6T).
inline constexpr QuantityRange kTrainingTokens{1.0, 1e17, "1", "1e17"};
/// Checkpoint intervals and restarts of a training run: from a second to ten years, written in days (the time
/// parser's largest unit) so that the message names a value the user can write.
inline constexpr QuantityRange kRunTime{1.0, 3650 * 86400.0, "1 s", "3650 d"};
/// Mean time between failures of one device or host: from a second to 10^7 hours. The Llama 3 report's GPU, the
/// default, fails every 86,300 h (9.85 years): a what-if at twice that, or devices that never fail (the hosts'
/// failures alone), must be writable.
inline constexpr QuantityRange kMtbf{1.0, 3.6e10, "1 s", "1e7 h"};

}  // namespace limits

}  // namespace dtsim::config
