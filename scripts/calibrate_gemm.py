#!/usr/bin/env python3
"""Fits the GEMM efficiency parameters of a device (hardware/*.yaml, device.efficiency.gemm) to published cuBLAS
measurements, once per device. Model (sim/kernels/compute_model.cpp):
    eff = max * A^p / (A^p + half_area^p) * k / (k + half_k),  A = batch * m * n
    time = max(flops / (peak * eff), bytes / (memory_bandwidth * memory_efficiency))
Grid search on the squared log error. Prints the parameters and the fit error per point.
Usage: scripts/calibrate_gemm.py a100|h100|h100-fp8|h800-fp8|h200-fp8|b200|b200-fp8|b200-nvfp4|gb200-fp8|gb200-nvfp4|gb300|gb300-fp8|gb300-nvfp4|
       mi300x|mi300x-fp8|mi355x
h100-fp8 fits device.efficiency.gemm_fp8 of hardware/dgx-h100.yaml: the same model at the fp8 peak, with 1-byte inputs
and a 2-byte (bf16) result in the roofline, as Transformer Engine's fp8 GEMMs run. A device with a single published
point (b200) keeps the H100 curve's shape (its half_area scaled by the SM count, 148 / 132) and fits `max`
alone; `checks` are points of a related device printed beside the fit, not fitted. gb200-fp8 fits
hardware/gb200-nvl72.yaml's fp8 curve like h100-fp8; b200-fp8 fits hardware/dgx-b200.yaml's to the same GB200 table
(sustained load, the same die) at B200's peak. gb300 and gb300-fp8 fit hardware/gb300-nvl72.yaml to cuBLASLt on a B300 (the GB300's GPU).
"""
import math
import sys

# (m, n, k, batch, measured TFLOP/s, source)
A100 = dict(peak=312e12, bw=2039e9 * 0.83, points=[
    (1024, 1024, 1024, 1, 119.4, "Azure AI-benchmarking-guide ND A100 v4, cuBLASLt FP16"),
    (2048, 2048, 2048, 1, 221.8, "same"),
    (4096, 4096, 4096, 1, 228.0, "same"),
    (8192, 8192, 8192, 1, 253.7, "same"),
    (16384, 16384, 16384, 1, 256.5, "same"),
    (1024, 2145, 1024, 1, 132.8, "same"),
    (6144, 12288, 12288, 1, 250.8, "same"),
    (802816, 192, 768, 1, 157.8, "same"),
    (2048, 2048, 256, 64, 130.2, "EleutherAI cookbook sample results, attention_score"),
    (2048, 256, 2048, 64, 219.0, "EleutherAI cookbook sample results, attention_over_value"),
    (1024, 128, 1024, 512, 132.5, "pytorch/pytorch#83272, bmm"),
], maxes=[0.82, 0.83, 0.84, 0.85, 0.86])
H100 = dict(peak=989e12, bw=3350e9 * 0.89, points=[
    (1024, 1024, 1024, 1, 176.6, "zzc0721/torch-performance-test-data#79, BF16"),
    (2048, 2048, 2048, 1, 676.6, "same"),
    (4096, 4096, 4096, 1, 788.7, "same"),
    (8192, 8192, 8192, 1, 797.8, "pranjalssh/fast.cu README, cuBLAS BF16"),
    (6144, 6144, 6144, 1, 741.1, "same"),
    (6144, 17920, 2816, 1, 792.1, "stas00/ml-engineering MAMF table (MxNxK, mamf-finder's order)"),
    (8192, 8192, 8192, 1, 797.5, "zzc0721/torch-performance-test-data#79, BF16"),
    (10240, 10240, 10240, 1, 719.7, "same"),
    (2048, 2048, 13312, 1, 794.5, "stas00/ml-engineering MAMF table @ 744d01e, torch 2.7.0+cu126"),
], maxes=[0.78, 0.80, 0.81, 0.82, 0.83, 0.84, 0.85], checks=[
    # meta-pytorch/float8_experimental#38 (2023-08), LLaMa-70B shapes at M = 16384, torch bf16 matmul; the GPU is not
    # named (grade C), fp8 rates there imply a Hopper part; (M, K, N) as published.
    (16384, 1280, 8192, 1, 989e12, 569.0, "float8_experimental#38 attn.wqkv (grade C)"),
    (16384, 8192, 1024, 1, 989e12, 550.0, "same, attn.w0"),
    (16384, 7168, 8192, 1, 989e12, 539.0, "same, ffn.w13"),
    (16384, 8192, 3584, 1, 989e12, 605.0, "same, ffn.w2"),
])
# Azure/AI-benchmarking-guide, "Azure Results/ND_H100_v5_results.md" (commit f350e7e), GEMM CuBLASLt table: FP8 (E4M3
# inputs), random initialization, 10,000 warm-up iterations, CUDA 12.6, on ND H100 v5 (H100 80GB HBM3 SXM).
H100_FP8 = dict(peak=1979e12, bw=3350e9 * 0.89, in_bytes=1, points=[
    (1024, 1024, 1024, 1, 274.1, "Azure AI-benchmarking-guide ND H100 v5, cuBLASLt FP8"),
    (2048, 2048, 2048, 1, 1011.3, "same"),
    (4096, 4096, 4096, 1, 1216.9, "same"),
    (8192, 8192, 8192, 1, 1290.1, "same"),
    (16384, 16384, 16384, 1, 1377.3, "same"),
    (32768, 32768, 32768, 1, 1382.2, "same"),
    (1024, 2145, 1024, 1, 410.7, "same"),
    (6144, 12288, 12288, 1, 1351.4, "same"),
    (802816, 192, 768, 1, 663.8, "same"),
], maxes=[0.66, 0.68, 0.69, 0.70, 0.71, 0.72, 0.74], checks=[
    # Burst and grade-C figures, printed beside the sustained-load table as for B200 and H200 (not fitted): stas00's
    # torch FP8 MAMF (best shape of a search, MxNxK) and float8_experimental#38's float8 matmuls (GPU not named).
    (1024, 9216, 14336, 1, 1979e12, 1402.6, "stas00/ml-engineering MAMF table @ 744d01e, FP8 e4m3 best shape (burst)"),
    (16384, 1280, 8192, 1, 1979e12, 1414.0, "float8_experimental#38 attn.wqkv, float8 matmul (grade C)"),
    (16384, 8192, 1024, 1, 1979e12, 1095.0, "same, attn.w0"),
    (16384, 7168, 8192, 1, 1979e12, 1384.0, "same, ffn.w13"),
    (16384, 8192, 3584, 1, 1979e12, 1291.0, "same, ffn.w2"),
])
# H800 SXM5 (the same GH100 compute): hardware/h800-deepseek.yaml takes the H100 fp8 fit; DeepSeek's own block-scaled
# FP8 GEMMs (deepseek-ai/DeepGEMM README @ 327ec92, NVCC 12.8, M 4096 rows; grade B) are printed beside it.
H800_FP8 = dict(H100_FP8, checks=[
    (4096, 2112, 7168, 1, 1979e12, 1127.0, "DeepGEMM 2025-04-09, H800, 1x128/128x128 block-scaled FP8"),
    (4096, 24576, 1536, 1, 1979e12, 1212.0, "same"),
    (4096, 32768, 512, 1, 1979e12, 775.0, "same"),
    (4096, 7168, 16384, 1, 1979e12, 1520.0, "same"),
    (4096, 4096, 7168, 1, 1979e12, 1410.0, "same"),
    (4096, 7168, 2048, 1, 1979e12, 1168.0, "same"),
])

# H200 SXM (same GH100 compute as H100, HBM3e 4.8 TB/s): Azure AI-benchmarking-guide "Azure_Results/ND_H200_v5_results.md"
# (samuel-bohman fork @ 5e2c4e5, CUDA 12.8), GEMM cuBLASLt FP8, random initialization, 10,000 warm-up iterations.
# Memory efficiency 0.87: the same page's STREAM triad 4.18 of 4.8 TB/s.
H200_FP8 = dict(peak=1979e12, bw=4800e9 * 0.87, in_bytes=1, points=[
    (1024, 1024, 1024, 1, 403.4, "Azure AI-benchmarking-guide ND H200 v5, cuBLASLt FP8"),
    (2048, 2048, 2048, 1, 1134.6, "same"),
    (4096, 4096, 4096, 1, 1249.2, "same"),
    (8192, 8192, 8192, 1, 1269.4, "same"),
    (16384, 16384, 16384, 1, 1305.0, "same"),
    (32768, 32768, 32768, 1, 1333.2, "same"),
    (1024, 2145, 1024, 1, 648.0, "same"),
    (802816, 192, 768, 1, 839.8, "same"),
], maxes=[0.62, 0.64, 0.66, 0.68, 0.70, 0.72])
# B200 (148 SMs, HBM3e 7.7 TB/s; memory efficiency 0.88: B300 SXM6 HBM reads of 7.02 of 8 TB/s, gb300-microbench; no B200
# stream measurement published).
# One B200 point each: stas00/ml-engineering MAMF table (torch 2.7.1+cu128, best shape of a brute-force search).
SM_RATIO = 148 / 132
# The BF16 points of B200 and B300 are burst figures (MAMF: 50 warm-up, 100 timed iterations; the B300 campaign: 3
# repetitions). A training step runs at the clock the GPU holds under sustained load: flashinfer-ai/flashinfer#2899
# (2026-03-26) timed a BF16 FlashAttention-4 kernel back to back on a B200, 1,450 TFLOP/s at its peak (iterations
# 10-19) and 1,237 once throttled (70-79). The hardware files take the fitted max times this ratio ("sustained").
SUSTAINED_OVER_BURST_BF16 = 1237 / 1450
B200 = dict(peak=2250e12, bw=7700e9 * 0.88, sustained=SUSTAINED_OVER_BURST_BF16, points=[
    (1792, 16128, 3072, 1, 1745.0, "stas00/ml-engineering MAMF table, B200 BF16 best shape"),
], fixed=dict(half_area=1482910 * SM_RATIO, p=3, half_k=192), checks=[
    (4096, 4096, 4096, 1, 2250e12, 1767.98, "B300 SXM6 cuBLASLt BF16 (Antoniomv7/gb300-microbench), same 2250 peak"),
    (8192, 8192, 8192, 1, 2250e12, 2099.27, "same"),
    (32768, 512, 4096, 1, 2250e12, 1516.27, "same"),
])
# fp8 (and mxfp8) on B200: the GB200 table below (GB200_FP8_POINTS), as measured, at B200's 4,500 peak. A training step
# runs at the clock its GPU holds under sustained load; that table was taken after 10,000 warm-up iterations, the only
# sustained FP8 table of this die (GB200's GPU is a B200, at up to 1,200 W against B200's 1,000 W: the same or more
# throughput under load). The burst figures are printed as checks: stas00's torch MAMF (50 warm-up, 100 timed
# iterations, best shape of a search) and the B300 cuBLASLt campaign (3 repetitions; a Blackwell Ultra at 1,100 W).
B200_FP8_CHECKS = [
    (15360, 4096, 3072, 1, 4500e12, 3432.5, "stas00/ml-engineering MAMF table, B200 FP8 e4m3 best shape (burst)"),
    (8192, 8192, 8192, 1, 4500e12, 3944.74, "B300 SXM6 cuBLASLt FP8 (Antoniomv7/gb300-microbench; burst)"),
    (4096, 4096, 4096, 1, 4500e12, 3187.09, "same"),
]
# NVFP4: no B200 table; the GB200 one (the same Blackwell GPU, at up to 1,200 W), Azure AI-benchmarking-guide
# "Azure_Results/ND_GB200_v6_results.md" (egmsft fork @ 0682f76, CUDA 12.8), cuBLASLt FP4, fitted as fractions of
# GB200's 9,800 TFLOP/s NVFP4 peak (NVIDIA/dgxc-benchmarking) with GB200's 8 TB/s; the fractions apply at B200's peak.
# Inputs 0.5625 bytes per element (E2M1 plus an E4M3 scale per 16).
B200_NVFP4 = dict(peak=9800e12, bw=8000e9 * 0.88, in_bytes=0.5625, points=[
    (1024, 1024, 1024, 1, 261.8, "Azure AI-benchmarking-guide ND GB200 v6, cuBLASLt FP4"),
    (2048, 2048, 2048, 1, 1398.0, "same"),
    (4096, 4096, 4096, 1, 4854.5, "same"),
    (8192, 8192, 8192, 1, 7609.1, "same"),
    (16384, 16384, 16384, 1, 5604.0, "same"),
    (32768, 32768, 32768, 1, 5262.2, "same"),
    (1024, 2145, 1024, 1, 548.3, "same"),
    (802816, 192, 768, 1, 2624.5, "same"),
], maxes=[0.50, 0.55, 0.60, 0.65, 0.70, 0.75, 0.80], checks=[
    # A B200's own NVFP4 GEMMs at B200's 9,000 peak, printed beside the fit, not fitted: pytorch/ao#2427 (commit
    # 09840d195), benchmarks/float8/bench_matmul.py --recipe nvfp4, torch._scaled_mm timed by torch.utils.benchmark
    # after 4 warm-up calls (a burst figure).
    (4096, 4096, 4096, 1, 9000e12, 4460.0, "torchao bench_matmul B200 NVFP4 (pytorch/ao#2427; burst)"),
    (6144, 6144, 6144, 1, 9000e12, 5500.0, "same"),
    (8192, 8192, 8192, 1, 9000e12, 5370.0, "same"),
])
# Azure/AI-benchmarking-guide "Azure_Results/ND_GB200_v6_results.md", the newer of the two versions (fork
# egmsft/AI-benchmarking-guide at 0682f76, CUDA 12.8, driver 570.133.20), GEMM CuBLASLt FP8 table, random
# initialization, 10,000 warm-up iterations, one GB200 GPU (../shared/reference/blackwell-h200-amd.md, 2.2.a). Peak:
# 5,000 TFLOP/s dense FP8 (hardware/gb200-nvl72.yaml); memory: 8 TB/s at the assumed 0.88 of that file.
GB200_FP8_POINTS = [
    (1024, 1024, 1024, 1, 349.4, "Azure AI-benchmarking-guide ND GB200 v6, cuBLASLt FP8"),
    (2048, 2048, 2048, 1, 1676.1, "same"),
    (4096, 4096, 4096, 1, 2694.7, "same"),
    (8192, 8192, 8192, 1, 2781.5, "same"),
    (16384, 16384, 16384, 1, 2819.5, "same"),
    (32768, 32768, 32768, 1, 2755.3, "same"),
    (1024, 2145, 1024, 1, 627.2, "same"),
    (6144, 12288, 12288, 1, 2798.7, "same"),
    (802816, 192, 768, 1, 1482.5, "same"),
]
GB200_FP8 = dict(peak=5000e12, bw=8000e9 * 0.88, in_bytes=1, points=GB200_FP8_POINTS,
                 maxes=[0.54, 0.55, 0.56, 0.57, 0.58, 0.59, 0.60, 0.62])
B200_FP8 = dict(peak=4500e12, bw=7700e9 * 0.88, in_bytes=1, points=GB200_FP8_POINTS,
                maxes=[0.60, 0.62, 0.64, 0.66, 0.67, 0.68, 0.70], checks=B200_FP8_CHECKS)

# Antoniomv7/gb300-microbench, B300 SXM6 AC (compute capability 10.3), cuBLASLt, FP32 accumulate, hot cache, mean of 3
# (results/precision_cutedsl_vs_cublaslt.csv at 1c36b44; BF16 also the README table at 060c4ae; ../shared/reference/
# blackwell-h200-amd.md 2.2.b). No GB300 GEMM table was found: the B300's, at the GB300's peaks (2,500 / 5,000
# TFLOP/s): its throughput, so `max` comes out below what a GB300 at its higher power may reach.
GB300 = dict(peak=2500e12, bw=8000e9 * 0.88, sustained=SUSTAINED_OVER_BURST_BF16, points=[
    (4096, 4096, 4096, 1, 1767.98, "gb300-microbench B300, cuBLASLt BF16"),
    (8192, 8192, 8192, 1, 2099.27, "same"),
    (32768, 512, 4096, 1, 1516.27, "same"),
    (16384, 512, 4096, 1, 1432.7, "same, README table"),
    (512, 16384, 4096, 1, 1495.1, "same, README table"),
], maxes=[0.80, 0.82, 0.84, 0.86, 0.88, 0.90])
GB300_FP8 = dict(peak=5000e12, bw=8000e9 * 0.88, in_bytes=1, points=[
    (4096, 4096, 4096, 1, 3187.09, "gb300-microbench B300, cuBLASLt FP8 e4m3"),
    (8192, 8192, 8192, 1, 3944.74, "same"),
    (32768, 512, 4096, 1, 2672.78, "same"),
], maxes=[0.76, 0.78, 0.80, 0.82, 0.84, 0.86])
# NVFP4 on GB200: the Azure GB200 FP4 table of B200_NVFP4 against the 10,000 TFLOP/s peak hardware/gb200-nvl72.yaml
# takes (datasheet figures, as its bf16 and fp8 peaks).
GB200_NVFP4 = dict(B200_NVFP4, peak=10000e12)
# NVFP4 on GB300: the fractions of peak of the GB200 table (GB200_NVFP4, the only NVFP4 table taken under sustained
# load), which hardware/gb300-nvl72.yaml applies at its 15,000 TFLOP/s peak, 1.5x GB200's as every source has it
# (dgxc-benchmarking 14,700 / 9,800 and B300 / B200 13,500 / 9,000; stas00 15,000 / 10,000). The B300 campaign's three
# cuBLASLt NVFP4 points (e2m1 with a ue4m3 scale per 16; Antoniomv7/gb300-microbench, 3 repetitions, burst) are
# printed as checks at the B300's own 13,500 peak (dgxc-benchmarking, and that campaign's vendor_dense_peak_tflops).
# They are not fitted: taken as the GB300's throughput they made Blackwell Ultra's NVFP4 GEMMs no faster than
# Blackwell's (7,546 TFLOP/s at 8192^3 against GB200's 7,609), where its NVFP4 peak is 1.5x and its fp8 peak the same;
# in the same campaign NVFP4 reaches 56% of the B300's 13,500 at 8192^3 where FP8 reaches 88% and BF16 93% of theirs.
GB300_NVFP4 = dict(GB200_NVFP4, checks=[
    (4096, 4096, 4096, 1, 13500e12, 4785.60, "gb300-microbench B300, cuBLASLt NVFP4 (burst)"),
    (8192, 8192, 8192, 1, 13500e12, 7545.62, "same"),
    (32768, 512, 4096, 1, 13500e12, 4096.23, "same"),
])


# AMD MI300X (304 CUs, HBM3 5.3 TB/s; memory efficiency 0.77: STREAM triad 4.09 of 5.3 TB/s on ND MI300X v5).
# FP8: Azure AI-benchmarking-guide "Azure_Results/ND_MI300X_v5_results.md" (samuel-bohman fork @ 3de0c29, ROCm 6.2,
# HIP 6.2.41133), GEMM hipBLASLt FP8 table, random initialization, 10,000 warm-up iterations, against the 2,610 TFLOP/s
# dense FP8 peak (stas00/ml-engineering accelerator table) (../shared/reference/blackwell-h200-amd.md, 2.2.c).
MI300X_FP8 = dict(peak=2610e12, bw=5300e9 * 0.77, in_bytes=1, points=[
    (1024, 1024, 1024, 1, 53.13, "Azure AI-benchmarking-guide ND MI300X v5, hipBLASLt FP8"),
    (2048, 2048, 2048, 1, 427.74, "same"),
    (4096, 4096, 4096, 1, 955.17, "same"),
    (8192, 8192, 8192, 1, 1159.23, "same"),
    (16384, 16384, 16384, 1, 1015.1, "same"),
    (32768, 32768, 32768, 1, 1029.14, "same"),
    (1024, 2145, 1024, 1, 110.96, "same"),
    (6144, 12288, 12288, 1, 1159.54, "same"),
    (802816, 192, 768, 1, 605.34, "same"),
], maxes=[0.36, 0.38, 0.40, 0.42, 0.44, 0.46, 0.48, 0.50])
# BF16: one published point, stas00/ml-engineering MAMF table (torch 2.5.1+ROCm 6.3, TunableOp on, best shape of a
# brute-force search) against the 1,300 TFLOP/s peak of the same table: the MI300X fp8 curve's shape (the same
# device's hipBLASLt tiles, fitted above) with max fitted alone.
MI300X_FP8_SHAPE = dict(half_area=5931642, p=1.5, half_k=640)  # mi300x-fp8 as fitted: its half_area, area_exponent, half_k
MI300X = dict(peak=1300e12, bw=5300e9 * 0.77, points=[
    (10240, 15360, 8192, 1, 668.4, "stas00/ml-engineering MAMF table, MI300X BF16 best shape"),
], fixed=dict(half_area=MI300X_FP8_SHAPE["half_area"], p=MI300X_FP8_SHAPE["p"], half_k=MI300X_FP8_SHAPE["half_k"]))
# AMD MI355X (256 CUs, HBM3E 8 TB/s; no stream measurement published: MI300X's 0.77 assumed). BF16: one published
# point, stas00/ml-engineering MAMF table (torch 2.8.0+rocm7.0.2, TunableOp off) 1,565 TFLOP/s at 12288x8192x8192,
# against AMD's 2,500 dense peak (stas00's spec table; that MAMF table divides by 2,300 instead, reference 1.4). The
# MI300X curve's shape, its half_area scaled by the CU count (256 / 304, as b200 scales H100's by the SM count), with
# max fitted alone.
MI355X = dict(peak=2500e12, bw=8000e9 * 0.77, points=[
    (12288, 8192, 8192, 1, 1565.0, "stas00/ml-engineering MAMF table, MI355X BF16 best shape"),
], fixed=dict(half_area=MI300X_FP8_SHAPE["half_area"] * 256 / 304, p=MI300X_FP8_SHAPE["p"],
              half_k=MI300X_FP8_SHAPE["half_k"]))


def model(dev, m, n, k, b, mx, half_area, half_k, p):
    area = b * m * n
    eff = mx * area ** p / (area ** p + half_area ** p) * k / (k + half_k)
    flops = 2.0 * m * n * k * b
    e = dev.get("in_bytes", 2)
    byts = b * (e * (m * k + k * n) + 2.0 * m * n)
    t = max(flops / (dev["peak"] * eff), byts / dev["bw"])
    return flops / t / 1e12


def fit(dev):
    best = None
    if "fixed" in dev:  # one point: the shape is kept, max alone is fitted
        f = dev["fixed"]
        for i in range(50, 100):
            mx = i / 100
            err = sum(math.log(model(dev, m, n, k, b, mx, f["half_area"], f["half_k"], f["p"]) / v) ** 2
                      for m, n, k, b, v, _ in dev["points"])
            if best is None or err < best[0]:
                best = (err, mx, f["half_area"], f["half_k"], f["p"])
        return best
    for mx in dev["maxes"]:
        for p in [1, 1.5, 2, 2.5, 3]:
            for ha in [2 ** (i / 2) for i in range(28, 48)]:
                for hk in [0, 32, 64, 96, 128, 160, 192, 256, 320, 384, 448, 512, 640]:
                    err = sum(math.log(model(dev, m, n, k, b, mx, ha, hk, p) / v) ** 2
                              for m, n, k, b, v, _ in dev["points"])
                    if best is None or err < best[0]:
                        best = (err, mx, ha, hk, p)
    return best


if __name__ == "__main__":
    dev = {"a100": A100, "h100": H100, "h100-fp8": H100_FP8, "h800-fp8": H800_FP8, "h200-fp8": H200_FP8, "b200": B200, "b200-fp8": B200_FP8,
           "b200-nvfp4": B200_NVFP4, "gb200-fp8": GB200_FP8, "gb300": GB300,
           "gb300-fp8": GB300_FP8, "gb200-nvfp4": GB200_NVFP4, "gb300-nvfp4": GB300_NVFP4,
           "mi300x": MI300X, "mi300x-fp8": MI300X_FP8, "mi355x": MI355X}[sys.argv[1] if len(sys.argv) > 1 else "a100"]
    _, mx, ha, hk, p = fit(dev)
    print(f"max: {mx}\nhalf_area: {ha:.0f}\narea_exponent: {p}\nhalf_k: {hk}")
    if "sustained" in dev:
        print(f"max at sustained load (the hardware file's): {mx} x {dev['sustained']:.4f} = {mx * dev['sustained']:.4f}")
    for m, n, k, b, v, src in dev["points"]:
        s = model(dev, m, n, k, b, mx, ha, hk, p)
        print(f"  {b:4d} x {m}x{n}x{k}: measured {v:6.1f}  model {s:6.1f}  ({100 * (s - v) / v:+.1f}%)  {src}")
    for m, n, k, b, peak, v, src in dev.get("checks", []):
        s = model(dict(dev, peak=peak), m, n, k, b, mx, ha, hk, p)
        print(f"  check {b:4d} x {m}x{n}x{k}: measured {v:6.1f}  model {s:6.1f}  ({100 * (s - v) / v:+.1f}%)  {src}")
