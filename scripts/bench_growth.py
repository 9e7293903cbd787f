#!/usr/bin/env python3
"""How dtsim's cost grows with devices, layers and microbatches (issue 6; docs/performance.md).

Runs `dtsim bench` on GPT-3 175B (tp 8, pp 16, 1F1B, folded) varying one quantity at a time, and counts the
instructions of `simulate()` under valgrind's callgrind (deterministic: a folded step now takes a few milliseconds
of CPU, whose user CPU moved by 2x from point to point on the shared machine at load 20 on 2026-11-28, and wall time
there measures the load). Writes docs/perf/growth.csv, fits the slope of log(instructions) against log(quantity)
by least squares, and draws docs/img/perf-growth.png with gnuplot. Usage: python3 scripts/bench_growth.py [--repeat N] [--dtsim build/dtsim]
Run from the repository root. Layer counts need a model file with another num_hidden_layers: the script writes
one per count under a temporary directory (a scenario cannot override a key of the model file it names).
"""
import argparse
import json
import math
import os
import re
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASE = os.path.join(ROOT, "scenarios", "default.yaml")  # GPT-3 175B, 1,024 A100, tp 8, pp 16, 96 layers
MICROBATCHES = 96  # per pipeline, fixed while devices vary (global batch = dp * 96)


def bench(dtsim, scenario, sets, repeat):
    cmd = [dtsim, "bench", "--scenario", scenario, "--repeat", str(repeat), "--format", "json"]
    for s in sets:
        cmd += ["--set", s]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    case = json.loads(out)["cases"][0]
    if not case["ok"] or case["step_time_s"] <= 0:
        raise SystemExit("dtsim bench failed or the plan does not fit: " + " ".join(cmd))
    return case


def simulate_instructions(dtsim, scenario, sets):
    """Instructions executed inside app::simulate (callgrind --toggle-collect): the replay, not the process start."""
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", "--toggle-collect=dtsim::app::simulate*",
           dtsim, "run", scenario, "--format", "json"]
    for s in sets:
        cmd += ["--set", s]
    err = subprocess.run(cmd, check=True, capture_output=True, text=True).stderr
    m = re.search(r"Collected : (\d+)", err)
    if not m:
        raise SystemExit("no instruction count from callgrind: " + " ".join(cmd))
    return int(m.group(1))


def model_with_layers(tmp, layers):
    """A copy of the GPT-3 175B model file with another layer count, and a scenario that uses it."""
    with open(os.path.join(ROOT, "models", "gpt3-175b.yaml")) as f:
        text = f.read()
    lines = [("num_hidden_layers: %d" % layers) if l.startswith("num_hidden_layers:") else l
             for l in text.splitlines()]
    model = os.path.join(tmp, "gpt3-175b-%d-layers.yaml" % layers)
    with open(model, "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(BASE) as f:
        scen = f.read()
    scen = "\n".join(("model: " + model) if l.startswith("model:") else
                     ("hardware: " + os.path.join(ROOT, "hardware", "dgx-a100-80gb.yaml")) if l.startswith("hardware:")
                     else l for l in scen.splitlines())
    path = os.path.join(tmp, "gpt3-175b-%d-layers-scenario.yaml" % layers)
    with open(path, "w") as f:
        f.write(scen + "\n")
    return path


def slope(points):
    """Least-squares slope of log(wall) against log(x)."""
    xs = [math.log(x) for x, _ in points]
    ys = [math.log(y) for _, y in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dtsim", default=os.path.join(ROOT, "build", "dtsim"))
    a = ap.parse_args()
    rows = []  # (series, x, wall best, user cpu median, peak rss MiB, activities, simulate() instructions in M)

    def record(series, x, scenario, sets):
        case = bench(a.dtsim, scenario, sets, a.repeat)
        minstr = simulate_instructions(a.dtsim, scenario, sets) / 1e6
        rows.append((series, x, case["wall_best_s"], case["user_cpu_median_s"], case["peak_rss_bytes"] / 2**20,
                     case["activities"], minstr))
        print("%-12s %6d  %.3f s  %6.1f MiB  %d activities  %.2f M instructions" %
              (series, x, case["wall_best_s"], rows[-1][4], case["activities"], minstr), flush=True)

    for dp in (1, 2, 4, 8, 16, 32):  # devices 128 .. 4,096 at 96 microbatches per pipeline
        dev = 128 * dp
        record("devices", dev, BASE, ["devices=%d" % dev, "training.global_batch=%d" % (dp * MICROBATCHES)])
    with tempfile.TemporaryDirectory() as tmp:
        for layers in (16, 32, 48, 64, 96, 128, 192):  # 1,024 GPUs, 192 microbatches (256 layers do not fit)
            record("layers", layers, model_with_layers(tmp, layers), [])
    for m in (16, 32, 64, 128, 256, 512, 1024):  # 1,024 GPUs (dp 8), m microbatches per pipeline
        record("microbatches", m, BASE, ["training.global_batch=%d" % (8 * m)])

    os.makedirs(os.path.join(ROOT, "docs", "perf"), exist_ok=True)
    csv = os.path.join(ROOT, "docs", "perf", "growth.csv")
    with open(csv, "w") as f:
        f.write("series,x,wall_best_s,user_cpu_median_s,peak_rss_mib,activities,simulate_minstr\n")
        for r in rows:
            f.write("%s,%d,%.4f,%.4f,%.1f,%d,%.2f\n" % r)
    series = ("devices", "layers", "microbatches")
    slopes = {s: slope([(x, w) for (ser, x, w, *_) in rows if ser == s]) for s in series}
    act_slopes = {s: slope([(r[1], r[5]) for r in rows if r[0] == s]) for s in series}
    ins_slopes = {s: slope([(r[1], r[6]) for r in rows if r[0] == s]) for s in series}
    # The curves bend upwards (fixed costs dominate the small cases): the slope of the three largest points
    # says how the cost grows from there on. Instructions are the figure that does not move with the machine's load:
    # the slopes quoted are of them.
    tail = {s: slope([(r[1], r[6]) for r in rows if r[0] == s][-3:]) for s in series}
    for s in series:
        print("slope %-12s instructions %.2f (three largest: %.2f)  wall %.2f  activities %.2f" %
              (s, ins_slopes[s], tail[s], slopes[s], act_slopes[s]))

    # One panel per quantity, all log-log, with the fitted slope in the key.
    gp = os.path.join(ROOT, "docs", "perf", "growth.gp")
    with open(gp, "w") as f:
        f.write("""# Written by scripts/bench_growth.py from docs/perf/growth.csv; run from the repository root.
set terminal pngcairo size 1650,500 font ",11"
set output "docs/img/perf-growth.png"
set datafile separator ","
set logscale xy
set grid
set key top left Left reverse samplen 2
set ylabel "instructions of simulate() per step (millions)"
set yrange [1:10000]
set multiplot layout 1,3 title "dtsim cost growth, GPT-3 175B (tp 8, pp 16, 1F1B, folded), callgrind"
set xlabel "devices (dp 1 to 32; 96 microbatches per pipeline)"
set xrange [64:8192]
plot "docs/perf/growth.csv" using ($2):(strcol(1) eq "devices" ? $7 : 1/0) with linespoints pt 7 title "slope %.2f (largest three: %.2f)"
set xlabel "layers (1,024 GPUs, 192 microbatches)"
set xrange [10:300]
plot "docs/perf/growth.csv" using ($2):(strcol(1) eq "layers" ? $7 : 1/0) with linespoints pt 7 title "slope %.2f (largest three: %.2f)"
set xlabel "microbatches per pipeline (1,024 GPUs)"
set xrange [10:2000]
plot "docs/perf/growth.csv" using ($2):(strcol(1) eq "microbatches" ? $7 : 1/0) with linespoints pt 7 title "slope %.2f (largest three: %.2f)"
unset multiplot
""" % (ins_slopes["devices"], tail["devices"], ins_slopes["layers"], tail["layers"],
       ins_slopes["microbatches"], tail["microbatches"]))
    subprocess.run(["gnuplot", gp], check=True, cwd=ROOT)
    print("wrote", csv, gp, "docs/img/perf-growth.png")


if __name__ == "__main__":
    main()
