#!/usr/bin/env python3
"""Calibrates a wafer's compute_efficiency (hardware/cerebras-cs2.yaml, wafer.compute_efficiency) on its one
published measurement: GPT-2 small, sequence 2048, batch 112 on one CS-2, 494.5 samples/s (ALCF AI Testbed
training material). Runs build/dtsim on scenarios/wafer/gpt2-small-cs2.yaml with a temporary copy of the hardware
file, and solves for the efficiency with a fixed-point iteration on the compute share of the step:
    e' = e * compute(e) / (target_step - (step(e) - compute(e)))
Prints the efficiency to write into the hardware file.
Usage: scripts/calibrate_wafer.py [TARGET_SAMPLES_PER_S]
"""
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HARDWARE = os.path.join(ROOT, "hardware", "cerebras-cs2.yaml")
SCENARIO = os.path.join(ROOT, "scenarios", "wafer", "gpt2-small-cs2.yaml")
DTSIM = os.path.join(ROOT, "build", "dtsim")


def run(eff, tmp):
    hw = re.sub(r"compute_efficiency: [0-9.]+", f"compute_efficiency: {eff:.6f}", open(HARDWARE).read())
    hw_path = os.path.join(tmp, "cs2.yaml")
    open(hw_path, "w").write(hw)
    out = subprocess.run([DTSIM, "run", SCENARIO, "--set", f"hardware={hw_path}", "--format", "json"],
                         check=True, capture_output=True, text=True).stdout
    d = json.loads(out)
    return d["step_time_s"], d["breakdown"]["compute_s"], d["samples_per_s"]


def main():
    target = float(sys.argv[1]) if len(sys.argv) > 1 else 494.5
    target_step = 112 / target
    eff = 0.2
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(6):
            step, compute, sps = run(eff, tmp)
            eff = eff * compute / (target_step - (step - compute))
        step, compute, sps = run(eff, tmp)
    print(f"compute_efficiency: {eff:.4f}   ({sps:.1f} samples/s simulated, {target} measured)")


if __name__ == "__main__":
    main()
