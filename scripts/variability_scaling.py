#!/usr/bin/env python3
"""The weak-scaling table of docs/variability.md: NeMo 24.07's GPT-3 175B plan (validation/nemo-2407-gpt3-175b-128:
tp 4, pp 8, vpp 6, 64 sequences per replica) from 64 to 2,048 H100, with no variability, with the device spread of
Sinha et al. (0.015), and with that spread and an assumed kernel jitter of 0.05. Each point is the mean of SAMPLES
drawn steps (seed 1). Run from the repository root after building: python3 scripts/variability_scaling.py [SAMPLES]"""
import json
import subprocess
import sys

SCENARIO = "scenarios/validation/nemo-2407-gpt3-175b-128.yaml"
SAMPLES = int(sys.argv[1]) if len(sys.argv) > 1 else 8
VARIANTS = [("none", []),
            ("device 0.015", ["--set", "variability.device_spread=0.015"]),
            ("device 0.015 + kernel 0.05", ["--set", "variability.device_spread=0.015",
                                            "--set", "variability.kernel_jitter=0.05"])]


def step(dp, extra):
    args = ["build/dtsim", "run", SCENARIO, "--format", "json", "--set", f"devices={32 * dp}",
            "--set", f"parallel.dp={dp}", "--set", f"training.global_batch={64 * dp}"] + extra
    if extra:
        args += ["--samples", str(SAMPLES), "--seed", "1"]
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)


print("| GPUs | " + " | ".join(name for name, _ in VARIANTS) + " | waiting for slower devices (last) | p5-p95 (last) |")
print("|---" * (len(VARIANTS) + 3) + "|")
first = {}
for dp in (2, 4, 8, 16, 32, 64):
    cells, last = [], None
    for name, extra in VARIANTS:
        r = step(dp, extra)
        s = r["step_time_s"]
        first.setdefault(name, s)
        cells.append(f"{s:.3f} s ({100 * (s / first[name] - 1):+.1f}%)")
        last = r
    spread = last["step_time_spread_s"]
    print(f"| {32 * dp:,} | " + " | ".join(cells) +
          f" | {last['breakdown'].get('straggler_s', 0):.3f} s | {spread['p5']:.3f}-{spread['p95']:.3f} s |")
