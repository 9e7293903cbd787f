#pragma once
/// NCCL releases that the collective tests pin, as NCCL_VERSION_CODE (major * 10000 + minor * 100 + patch).

namespace dtsim::test {

constexpr int kNccl2194 = 21904, kNccl2205 = 22005, kNccl2215 = 22105, kNccl2223 = 22203, kNccl2234 = 22304,
              kNccl2275 = 22705;

}  // namespace dtsim::test
