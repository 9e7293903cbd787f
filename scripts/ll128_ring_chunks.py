#!/usr/bin/env python3
"""Event simulation of one channel of NCCL's ring all-reduce under LL128 on 8 x A100, as the kernels of releases
before 2.20.3 cut the chunks and as 2.22.3 and later do, against NCCL's tuner; the check behind algorithms/ring.cpp's
ll128_rounded_chunks_us (docs/validation.md, section 9).

What it follows (NVIDIA/nccl v2.19.4-1): device/all_reduce.h runRing, 2n - 1 ops per rank (send, n - 2
recvReduceSend, recvReduceCopySend, n - 2 recvCopySend, recv), each on the chunk the ring hands it; before 2.20.3 a
chunk is rounded up to 19,200 B (640 threads x 60 B / 2) and the chunks are laid chunk by chunk across the 24
channels, from 2.22.3 they are the share itself (aligned to 16 B). prims_ll128.h GenericOp runs an op in passes of
38,400 B (20 warps x 1,920 B); a pass may start when the rank's previous pass has ended and the upstream rank's same
pass has arrived (NCCL's hop latency, hwLatencies[NVLINK][RING][LL128] 1.9 us, later), and takes its bytes at the
channel's share of the bus bandwidth (0.92 x 240 GB/s / 24). The last op copies locally (no link time). The time
adds baseLatencies 14 us.
    usage: python3 scripts/ll128_ring_chunks.py
"""
import math

RANKS = 8
CHANNELS = 24                  # the kernels' (connect.cc doubles the graph's 12)
BUS_BPS = 0.92 * 240e9         # LL128's fraction of the A100 node's 12 x 20 GB/s
HOP_S = 1.9e-6
BASE_S = 14e-6
THREADS = 640
PASS_BYTES = THREADS * 60
MIN_CHUNK_BYTES = THREADS * 60 // 2
MAX_CHUNK_BYTES = 576000       # one step of the LL128 buffer, data only: a loop


def chunk_sizes(size, rounded):
    """Bytes of chunk c on channel b, as a function size_of(c, b), for a tensor of `size` bytes (one loop)."""
    if rounded:
        chunk = min(MAX_CHUNK_BYTES, math.ceil(size / (CHANNELS * RANKS * MIN_CHUNK_BYTES)) * MIN_CHUNK_BYTES)
        offset = lambda c, b: (c * CHANNELS + b) * chunk
    else:
        chunk = math.ceil(size / (CHANNELS * RANKS) / 16) * 16
        offset = lambda c, b: (b * RANKS + c) * chunk
    assert size <= CHANNELS * RANKS * chunk, "one loop only"
    return lambda c, b: max(0, min(chunk, size - offset(c, b)))


def op_chunk(rank, step):
    """The chunk rank `rank` (its ring index) handles at op `step` of runRing."""
    n = RANKS
    if step <= n - 2:
        return (rank + n - 1 - step) % n
    if step == n - 1:
        return rank
    if step <= 2 * n - 3:
        return (rank + n - (step - n + 1)) % n
    return (rank + 1) % n


def simulate(size, rounded):
    size_of = chunk_sizes(size, rounded)
    per_channel_Bps = BUS_BPS / CHANNELS
    steps = 2 * RANKS - 1
    slowest = 0.0
    for channel in range(CHANNELS):
        passes, op_end = {}, {}
        for step in range(steps):
            for rank in range(RANKS):
                left = size_of(op_chunk(rank, step), channel)
                t = op_end.get((rank, step - 1), 0.0)
                ends = []
                while left > 0:
                    d = min(PASS_BYTES, left)
                    if step > 0:
                        upstream = passes[((rank - 1) % RANKS, step - 1)]
                        if len(ends) < len(upstream):
                            t = max(t, upstream[len(ends)] + HOP_S)
                    t += d / per_channel_Bps if step < steps - 1 else 0.0
                    ends.append(t)
                    left -= d
                passes[(rank, step)] = ends
                op_end[(rank, step)] = t
        slowest = max(slowest, max(op_end.values()))
    return BASE_S + slowest


def tuner(size):
    steps = 2 * (RANKS - 1)
    return BASE_S + steps * HOP_S + size / (BUS_BPS * RANKS / steps)


if __name__ == "__main__":
    print("| size | NCCL's tuner (us) | chunks from 2.22.3 (us) | chunks before 2.20.3 (us) |")
    print("|---|---:|---:|---:|")
    for mib in (1, 2, 4, 8, 16):
        size = mib << 20
        print(f"| {mib} MiB | {tuner(size) * 1e6:.1f} | {simulate(size, False) * 1e6:.1f} | "
              f"{simulate(size, True) * 1e6:.1f} |")
