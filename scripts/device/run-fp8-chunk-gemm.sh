#!/usr/bin/env bash
# Device check for the Megatron-Bridge residuals (docs/validation.md, section 0): builds and runs
# scripts/device/fp8_chunk_gemm.cu on the GPU of this machine and writes its CSV to ${OUT:-.}/fp8_chunk_gemm.csv.
# Needs the CUDA toolkit (nvcc, cuBLASLt); about 30 s on an H100.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-.}
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$nvcc" -O2 -std=c++17 -o "$out/fp8_chunk_gemm" scripts/device/fp8_chunk_gemm.cu -lcublasLt
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > "$out/gpu.csv" || true
"$out/fp8_chunk_gemm" | tee "$out/fp8_chunk_gemm.csv"
