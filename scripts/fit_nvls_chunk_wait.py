#!/usr/bin/env python3
"""Fits NVLS's wait per chunk (sim/collectives/algorithms/nvls.cpp, kChunkWaitUs) on one published curve and prints
the errors it leaves there and on two curves it was not fitted on.

The model is nvls.cpp's: an all-reduce of S bytes on n GPUs of one NVSwitch node runs as channels x heads streams
(16 x 8 on H100), each at its share of the links' goodput over S(1 + 1/n); the tensor is cut into chunks of 16 to
128 KiB by NCCL's rule (enqueue.cc calcCollChunking); every chunk costs its transfer plus a wait w, and the first
chunk's round is paid once beside NCCL's 25 us. w is the one free constant: the least-squares fit of the bus
bandwidth's relative error over the fit curve's points from 2 MiB up (below, NCCL runs the ring).

Fit curve: 8 x H100, NCCL_ALGO=NVLS, NCCL 2.26.2 (../shared/reference/collectives-and-kernels.md, A.1.b, NVLS
columns). Checks: A.1.a (DGX H100, default algorithm) and A.1.d (Azure ND H100 v5, NVLS), from 8 MiB up.
    usage: python3 scripts/fit_nvls_chunk_wait.py
"""
MiB = 1 << 20
N = 8
GOODPUT = 18 * 20.6e9  # hardware/dgx-h100.yaml, node.nvlink.goodput
STREAMS = 16 * 8       # NVLS_NCHANNELS_SM90 x one head per GPU

FIT = {2: 83.72, 4: 131.23, 8: 173.32, 16: 233.27, 32: 293.46, 64: 358.47, 128: 399.58, 256: 422.63,
       512: 436.17, 1024: 466.96, 2048: 472.76, 4096: 476.45, 8192: 479.32}
CHECKS = {
    "A.1.a": {8: 176.77, 16: 237.21, 32: 294.69, 64: 361.67, 128: 400.53, 256: 422.25, 512: 436.79,
              1024: 466.33, 2048: 473.37, 4096: 477.24, 8192: 480.16, 16384: 479.90},
    "A.1.d": {8: 172.13, 16: 234.45, 32: 295.53, 64: 361.78, 128: 400.61, 256: 423.38, 512: 438.46,
              1024: 466.35, 2048: 472.36, 4096: 475.54, 8192: 478.87},
}


def chunk(size):
    c = 128 * 1024
    if size < 64 * STREAMS * c:
        c = 65536
    if size < 8 * STREAMS * c:
        c = 32768
    if size < 2 * STREAMS * c:
        c = 16384
    return c


def bus_GBps(size, wait_s):
    stream = GOODPUT / (1 + 1 / N) / STREAMS
    c = chunk(size)
    t = 25e-6 + (size / (STREAMS * c) + 1) * (c / stream + wait_s)
    return size / t * 2 * (N - 1) / N / 1e9


def errors(curve, wait_s):
    return {m: bus_GBps(m * MiB, wait_s) / v - 1 for m, v in curve.items()}


best = min((sum(e * e for e in errors(FIT, w * 1e-7).values()), w * 1e-7) for w in range(0, 300))
w = best[1]
print(f"wait per chunk: {w * 1e6:.1f} us (fitted on A.1.b, NVLS)")
for name, curve in [("A.1.b (fit)", FIT)] + list(CHECKS.items()):
    e = errors(curve, w)
    row = " ".join(f"{m}M {100 * x:+.1f}%" for m, x in e.items())
    print(f"{name}: {row}; within 10%: {sum(abs(x) <= 0.1 for x in e.values())} of {len(e)}")
