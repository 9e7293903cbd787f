#!/usr/bin/env python3
"""Fits the fused attention rows of a device (hardware/*.yaml, device.efficiency.attention.KERNEL) to every published
measurement of that kernel on that device, once per device and kernel, and prints the rows and the error at every point.

The only published per-sequence curves of H100 attention are the bars of the FlashAttention-3 paper (Shah et al. 2024,
arXiv:2407.08608, Fig. 5 forward and Fig. 6 backward, H100 80GB SXM5, BF16, batch x seq = 16k tokens, hidden 2048), read
through a third-party transcription (grade D: "use for curve shape only", ../shared/reference/collectives-and-kernels.md
B.4.b). They give each kernel's shape: how its throughput varies with sequence, head dimension, direction and the causal
mask. Two factors per device and kernel are fitted to the text-form measurements of that kernel on that device (grade
B or better), least squares in log throughput: the level of the four non-causal rows on the non-causal points, then
the causal share (the forward causal row, which sets it) on the causal points. A factor with no such point stays 1.
Other published points (grade C or D, claims without a configuration, or outside the rows' range) are printed as
checks, not fitted.

The model is sim/kernels/attention_kernel.cpp's: rows at sequence 512, 1k, 2k, 4k, 8k, 16k, linear in log2(seq) and in
log2(head_dim) between 64 and 128, clamped outside; causal = non-causal x (forward causal / forward at head dim 128).
Forward + backward throughput counts as flash-attention's benchmarks/benchmark_flash_attention.py does: forward FLOPs
f = 4 b s^2 h d (halved when causal), backward 2.5 f (the recomputed scores), together 3.5 f.

Usage: scripts/calibrate_attention.py h100|h200 [KERNEL]   (KERNEL: flash_attention_2, flash_attention_3, cudnn)
"""
import math
import sys

SEQS = [512, 1024, 2048, 4096, 8192, 16384]

# FlashAttention-3 paper, Fig. 5 and 6 (as transcribed; B.4.b): the five rows dtsim's tables hold, per kernel.
FIGURE = {
    "flash_attention_2": dict(
        forward_d64=[282, 306, 318, 321, 322, 324],
        forward_d128=[309, 350, 362, 368, 370, 370],
        forward_d128_causal=[191, 260, 298, 319, 333, 335],
        backward_d64=[198, 238, 264, 279, 287, 291],
        backward_d128=[214, 260, 291, 310, 318, 322]),
    "flash_attention_3": dict(
        forward_d64=[333, 392, 460, 476, 496, 497],
        forward_d128=[467, 565, 625, 638, 646, 648],
        forward_d128_causal=[292, 423, 521, 579, 602, 616],
        backward_d64=[272, 363, 422, 453, 472, 474],
        backward_d128=[316, 424, 501, 542, 559, 561]),
    "cudnn": dict(
        forward_d64=[335, 373, 395, 408, 412, 413],
        forward_d128=[497, 574, 617, 609, 600, 595],
        forward_d128_causal=[315, 410, 484, 518, 529, 539],
        backward_d64=[266, 348, 395, 417, 432, 433],
        backward_d128=[305, 408, 465, 499, 518, 516]),
}

# A point: (kernel, what, causal, head_dim, seq, measured TFLOP/s, grade, source). `what` is fwd, bwd, fwd_bwd, or
# max_fwd (the best forward over the rows' range: a claim of "up to" or "only N% utilization").
AZURE = ("Azure AI-benchmarking-guide, Benchmarks/NVIDIA/FlashAttention.py @ 9fe7778 (flash-attention "
         "benchmark_flash_attention.py, batch 2, dim 2048)")
H100_POINTS = [
    ("flash_attention_2", "fwd_bwd", True, 128, 8192, 327.9, "B", "ND H100 v5: " + AZURE),
    ("flash_attention_2", "max_fwd", False, 128, None, 0.35 * 989, "B",
     "FA3 paper abstract: FlashAttention-2 reaches 'only 35% utilization on the H100' (configuration unstated)"),
    ("flash_attention_3", "max_fwd", False, 128, None, 740, "B",
     "FA3 paper abstract: 'up to 740 TFLOPs/s' FP16 (its best configuration, head dim 256 in the figures)"),
] + [("flash_attention_3", "fwd", False, 128, s, v, "C",
      "pytorch/benchmark PR #2391 (ff65cb6), FA3 forward, B x S = 16k, H x D = 2048; GPU and mask not printed")
     for s, v in zip(SEQS, [430.32, 517.099, 565.544, 590.233, 614.234, 620.73])
] + [("flash_attention_2", "fwd", True, 64, s, v, "D", "FA3 paper Fig. 5, head dim 64 panel, probably causal")
     for s, v in zip(SEQS, [180, 229, 262, 284, 295, 299])
] + [("flash_attention_3", "fwd", True, 64, s, v, "D", "FA3 paper Fig. 5, head dim 64 panel, probably causal")
     for s, v in zip(SEQS, [197, 265, 371, 420, 460, 473])
] + [("flash_attention_2", "fwd", False, 256, s, v, "D", "FA3 paper Fig. 5, head dim 256 (rows clamp at 128)")
     for s, v in zip(SEQS, [208, 251, 278, 293, 297, 298])
] + [("flash_attention_3", "fwd", False, 256, s, v, "D", "FA3 paper Fig. 5, head dim 256 (rows clamp at 128)")
     for s, v in zip(SEQS, [286, 427, 537, 612, 628, 642])]
# H200 SXM: the same GH100 compute as H100 (132 SMs, same clocks), more and faster HBM; the same figures' shapes.
H200_POINTS = [
    ("flash_attention_2", "fwd_bwd", True, 128, 8192, 329.3, "B",
     "ND H200 v5 (samuel-bohman fork @ 5e2c4e5): " + AZURE),
]
DEVICES = {"h100": H100_POINTS, "h200": H200_POINTS}


def log_interp(row, seq):
    x = min(max(math.log2(seq / 512), 0.0), 5.0)
    i = min(int(x), 4)
    f = x - i
    return row[i] * (1 - f) + row[i + 1] * f


def rate(rows, fwd, causal, seq, head_dim):
    lo = log_interp(rows["forward_d64" if fwd else "backward_d64"], seq)
    hi = log_interp(rows["forward_d128" if fwd else "backward_d128"], seq)
    f = min(max(math.log2(head_dim / 64), 0.0), 1.0)
    t = lo * (1 - f) + hi * f
    if causal:
        t *= log_interp(rows["forward_d128_causal"], seq) / log_interp(rows["forward_d128"], seq)
    return t


def predict(rows, what, causal, head_dim, seq):
    if what == "fwd":
        return rate(rows, True, causal, seq, head_dim)
    if what == "bwd":
        return rate(rows, False, causal, seq, head_dim)
    if what == "fwd_bwd":
        return 3.5 / (1 / rate(rows, True, causal, seq, head_dim) + 2.5 / rate(rows, False, causal, seq, head_dim))
    return max(rate(rows, True, causal, s, head_dim) for s in SEQS)  # max_fwd


def scaled(rows, level, causal_share):
    out = {k: [round(v * level) for v in r] for k, r in rows.items()}
    out["forward_d128_causal"] = [round(v * level * causal_share) for v in rows["forward_d128_causal"]]
    return out


def log_mean_ratio(rows, points):
    logs = [math.log(p[5] / predict(rows, p[1], p[2], p[3], p[4])) for p in points]
    return math.exp(sum(logs) / len(logs)) if logs else 1.0


def fit(kernel, points):
    """The non-causal level, then the causal share: each on the kernel's grade A/B points of its kind in range."""
    fitted = [p for p in points if p[0] == kernel and p[6] in "AB" and p[1] != "max_fwd" and p[3] <= 128]
    full = [p for p in fitted if not p[2]]
    causal = [p for p in fitted if p[2]]
    level = log_mean_ratio(FIGURE[kernel], full)
    share = log_mean_ratio({k: [v * level for v in r] for k, r in FIGURE[kernel].items()}, causal)
    return level, share, fitted


if __name__ == "__main__":
    device = sys.argv[1] if len(sys.argv) > 1 else "h100"
    points = DEVICES[device]
    for kernel in sys.argv[2:] or list(FIGURE):
        level, share, fitted = fit(kernel, points)
        rows = scaled(FIGURE[kernel], level, share)
        worst = max(c / f for c, f in zip(rows["forward_d128_causal"], rows["forward_d128"]))
        print(f"{kernel}: non-causal level x {level:.4f}, causal share x {share:.4f} on {len(fitted)} fitted "
              f"point(s); causal / non-causal forward at most {worst:.3f}")
        assert worst <= 1, "a causal kernel faster than the full one: the fit is not physical"
        for k, r in rows.items():
            print(f"  {k}: [{', '.join(str(v) for v in r)}]")
        for p in points:
            if p[0] != kernel:
                continue
            k_, what, causal, hd, seq, v, grade, src = p
            s = predict(rows, what, causal, hd, seq)
            tag = "fitted" if p in fitted else "check "
            where = f"{what} {'causal' if causal else 'full'} hd{hd}" + (f" seq {seq}" if seq else "")
            print(f"  {tag} {where:32s} measured {v:6.1f}  model {s:6.1f}  ({100 * (s - v) / v:+.1f}%)  "
                  f"grade {grade}: {src}")
