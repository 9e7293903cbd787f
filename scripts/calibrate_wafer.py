#!/usr/bin/env python3
"""Fits the wafer's GEMM model (wafer.core_gemm in hardware/cerebras-cs2.yaml and cerebras-cs3.yaml; the model is
sim/systems/cerebras_wafer/core_gemm.hpp) on a named minority of the published Cerebras runs (3 of the 17 in
tests/validation/cerebras_wafer.csv), and reports the others as checks.

A GEMM runs at max_efficiency * v / (v + half_length) of peak, v its reduction elements per core. A step's compute
time is then  M + C0 / max_efficiency + C1 * half_length / max_efficiency,  with M the memory-bound kernels, C0 the
GEMMs at peak and C1 the GEMMs at peak weighted by 1 / v: linear in u = 1 / max_efficiency and w = half_length /
max_efficiency. For each run the script reads M, C0 and C1 off three dtsim runs (M holds the kernel switches,
wafer.kernel_switch, which are cited, not fitted), takes the rest of the step (streaming, the layer inputs off the
wafer, fabric, the MemoryX tail) from a run at the current fit, and solves the least-squares problem on the
relative step-time errors; three rounds, since the rest moves a little with the fit.

CS-2: both parameters on its two calibration runs (GPT-J 6B on two CS-2, BERT-Large at batch 1024), with
leave-one-out (half_length on the other run, max_efficiency 1); max_efficiency is bounded by 1 (peak): when the
unbounded optimum lies above it, it is held at 1 and half_length alone is fitted; likewise half_length is bounded
by 0. CS-3: max_efficiency kept from CS-2, half_length from its own run (GPT-J 6B on one CS-3).
Checks: every other published run; their step-time errors (simulated / measured - 1) are printed and, with
--write, written as wafer.calibration.heldout_errors, which give every wafer answer its interval.
--candidates: for each candidate cost the GEMM model leaves out (a fixed cost per step, per pass, per layer and pass,
per token and layer, per activation element, per attention-score element), fits its coefficient together with the
two half_lengths on the same calibration runs (max_efficiency held at 1: a GEMM reaches at most peak, and the
two CS-2 runs then fix half_length and the coefficient) and prints the checks' errors: what
docs/wafer.md ("Tried and rejected") reports on the candidates.
--micro-batch-survey: each micro batch Cerebras ships (or its compiler logged) whose model dtsim describes, with
its on-wafer SRAM as a fraction of the wafer's and what dtsim's rule (the largest divisor that fits) picks: the
check of that rule in docs/wafer.md ("The compiler's choices").
--system-pairs: the models measured on both a CS-2 and a CS-3 (ESM-2 35M, DiT-2B), each step split into a part
that does not change with the wafer (a fixed cost per step: host, input, streaming latency, kernel switches) and a
part that scales with samples / peak (the kernels' work), from the two systems' steps; measured and simulated side by
side: docs/wafer.md ("The CS-2 / CS-3 pairs").
Usage: scripts/calibrate_wafer.py [--write | --candidates | --micro-batch-survey | --system-pairs]
(--write puts the fitted values into the hardware files)
"""
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DTSIM = os.path.join(ROOT, "build", "dtsim")
CS2 = os.path.join(ROOT, "hardware", "cerebras-cs2.yaml")
CS3 = os.path.join(ROOT, "hardware", "cerebras-cs3.yaml")
# The calibration runs, a named minority of the published weight-streaming runs (3 of 17; tests/validation/
# cerebras_wafer.csv): (scenario, global batch, measured samples/s), release 2.0.3 on CS-2 and 2.5.0 on CS-3
# (shared/reference/published_runs.md section 4 says 2.6-2.10: docs/wafer.md, "The runs' configurations").
CS2_RUNS = [("scenarios/wafer/gpt-j-6b-2x-cs2.yaml", 120, 43.67),
            ("scenarios/wafer/bert-large-cs2.yaml", 1024, 4047.95)]
CS3_RUNS = [("scenarios/wafer/gpt-j-6b-cs3.yaml", 120, 44.75)]
# A third CS-2 run with a logged batch, micro batch and model-zoo sequence, for leave one out only (it stays a check):
# Llama 7B at release 2.1.1 (cbfloat16, dynamic loss scaling), the largest CS-2 model after GPT-J.
CS2_LOO_EXTRA = [("scenarios/validation/cerebras-llama-7b-cs2.yaml", 99, 99 / 4.8431)]
# The checks: every other published run (shared/reference/cerebras.md; step times as in the validation table,
# here as samples/s). Their errors are the held-out errors that give every wafer answer its interval.
CHECK_RUNS = [("scenarios/wafer/gpt2-small-cs2.yaml", 112, 494.5, CS2),
              ("scenarios/validation/cerebras-bert-large-cs2-b512.yaml", 512, 512 / 0.1747, CS2),
              ("scenarios/validation/cerebras-bert-large-cs2-b2048.yaml", 2048, 6727.92, CS2),
              # The calibration run's configuration under release 2.1.1 (2024-04-09), as b512 and b2048 ran.
              ("scenarios/validation/cerebras-bert-large-cs2-b1024.yaml", 1024, 1024 / 0.21169, CS2),
              ("scenarios/validation/cerebras-esm2-35m-cs2.yaml", 2048, 585.88, CS2),
              ("scenarios/validation/cerebras-dit-2b-cs2.yaml", 1100, 405.45, CS2),
              ("scenarios/validation/cerebras-esm2-35m-cs3.yaml", 2048, 2048 / 2.09, CS3),
              ("scenarios/validation/cerebras-dit-2b-cs3.yaml", 1168, 1168 / 1.333, CS3),
              ("scenarios/validation/cerebras-llama3-8b-cs3.yaml", 960, 960 / 49.3, CS3),
              ("scenarios/validation/cerebras-llama-7b-cs2.yaml", 99, 99 / 4.8431, CS2),
              ("scenarios/validation/cerebras-llama2-7b-cs3.yaml", 1024, 1024 / 32.02, CS3),
              # The same model on the same cluster at batch 32, 64 and 128 (2025-12-06, release 2.6 client): the
              # step's cost that does not grow with the batch, measured (docs/wafer.md, "The CS-3 batch sweep").
              ("scenarios/validation/cerebras-llama2-7b-cs3-b32.yaml", 32, 32 / 1.11521, CS3),
              ("scenarios/validation/cerebras-llama2-7b-cs3-b64.yaml", 64, 64 / 2.03622, CS3),
              ("scenarios/validation/cerebras-llama2-7b-cs3-b128.yaml", 128, 128 / 3.93474, CS3)]


def with_gemm(hw_text, emax, half):
    t = re.sub(r"max_efficiency: [0-9.A-Z]+", f"max_efficiency: {emax:.6g}", hw_text)
    return re.sub(r"half_length: [0-9.A-Z]+", f"half_length: {half:.6g}", t)


def run_json(scenario, hw_text, emax, half, tmp):
    path = os.path.join(tmp, "hw.yaml")
    open(path, "w").write(with_gemm(hw_text, emax, half))
    out = subprocess.run([DTSIM, "run", os.path.join(ROOT, scenario), "--set", f"hardware={path}", "--format",
                          "json"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"dtsim failed on {scenario} (max_efficiency {emax}, half_length {half}):\n{out.stderr}")
    return json.loads(out.stdout)


def run(scenario, hw_text, emax, half, tmp):
    d = run_json(scenario, hw_text, emax, half, tmp)
    return d["step_time_s"], d["breakdown"]["compute_s"], d["samples_per_s"]


def terms(scenario, hw_text, tmp, h0=1000.0):
    """M, C0, C1 of the compute time M + u*C0 + w*C1."""
    _, a, _ = run(scenario, hw_text, 1.0, 0.0, tmp)   # M + C0
    _, b, _ = run(scenario, hw_text, 0.5, 0.0, tmp)   # M + 2 C0
    _, c, _ = run(scenario, hw_text, 1.0, h0, tmp)    # M + C0 + h0 C1
    c0 = b - a
    return a - c0, c0, (c - a) / h0


def lsq(rows, fixed_w=None):
    """rows: (target, M + rest, C0, C1). Minimises sum ((rest + u C0 + w C1) / target - 1)^2."""
    if fixed_w is not None:  # one parameter: u
        num = sum(r[2] / r[0] * (1 - (r[1] + fixed_w * r[3]) / r[0]) for r in rows)
        den = sum((r[2] / r[0]) ** 2 for r in rows)
        return num / den, fixed_w
    a11 = sum((r[2] / r[0]) ** 2 for r in rows)
    a12 = sum(r[2] * r[3] / r[0] ** 2 for r in rows)
    a22 = sum((r[3] / r[0]) ** 2 for r in rows)
    b1 = sum(r[2] / r[0] * (1 - r[1] / r[0]) for r in rows)
    b2 = sum(r[3] / r[0] * (1 - r[1] / r[0]) for r in rows)
    det = a11 * a22 - a12 * a12
    return (b1 * a22 - b2 * a12) / det, (a11 * b2 - a12 * b1) / det


def lsq_w(rows, u):
    """rows as in lsq, with u = 1 / max_efficiency held: the w that minimises the same sum."""
    num = sum(r[3] / r[0] * (1 - (r[1] + u * r[2]) / r[0]) for r in rows)
    return num / sum((r[3] / r[0]) ** 2 for r in rows)


def fit(runs, hw_text, tmp, fixed_emax=None, start=(0.3, 300.0)):
    emax, half = start
    base = [(s, terms(s, hw_text, tmp)) for s, _, _ in runs]
    for _ in range(3):
        rows = []
        for (s, batch, sps), (_, (m, c0, c1)) in zip(runs, base):
            step, compute, _ = run(s, hw_text, emax, half, tmp)
            rows.append((batch / sps, m + (step - compute), c0, c1))
        if fixed_emax is not None:
            emax, half = fixed_emax, lsq_w(rows, 1 / fixed_emax) * fixed_emax
        elif (uw := lsq(rows))[0] < 1:  # above peak: max_efficiency is bounded by 1, fit half_length alone
            emax, half = 1.0, lsq_w(rows, 1.0)
        elif uw[1] < 0:  # no shape dependence left: half_length is bounded by 0, fit max_efficiency alone
            u, _ = lsq(rows, 0.0)
            emax, half = 1 / u, 0.0
        else:
            emax, half = 1 / uw[0], uw[1] / uw[0]
    return emax, half, rows


def report(runs, hw_text, tmp, emax, half, label):
    print(f"{label}: max_efficiency {emax:.4f}, half_length {half:.1f}")
    print("| run | measured samples/s | simulated | error |")
    print("|---|---|---|---|")
    for s, batch, sps in runs:
        _, _, sim = run(s, hw_text, emax, half, tmp)
        print(f"| {os.path.basename(s)} | {sps:g} | {sim:.2f} | {100 * (sim / sps - 1):+.1f}% |")


def model_shape(scenario):
    """layers, hidden size and heads of the scenario's model file."""
    text = open(os.path.join(ROOT, scenario)).read()
    model = os.path.normpath(os.path.join(ROOT, os.path.dirname(scenario), re.search(r"^model: (\S+)", text, re.M)[1]))
    spec = open(model).read()
    key = lambda k: int(re.search(rf"^{k}: (\d+)", spec, re.M)[1])
    return key("num_hidden_layers"), key("hidden_size"), key("num_attention_heads")


# Candidate costs left out of the GEMM model, each as a count per step of one system: a coefficient (seconds per
# count) is fitted with the half_lengths. d is the run's JSON, (L, h, a) its model's layers, hidden size, heads.
CANDIDATES = [
    ("fixed cost per step", lambda d, L, h, a: 1.0),
    ("per pass (micro batch)", lambda d, L, h, a: d["wafer"]["passes_per_step"]),
    ("per layer and pass", lambda d, L, h, a: d["wafer"]["passes_per_step"] * L),
    ("per token and layer", lambda d, L, h, a: d["wafer"]["passes_per_step"] * d["plan"]["micro_batch"] *
     d["plan"]["seq_len"] * L),
    ("per activation element (token x hidden x layer)", lambda d, L, h, a: d["wafer"]["passes_per_step"] *
     d["plan"]["micro_batch"] * d["plan"]["seq_len"] * h * L),
    ("per attention-score element", lambda d, L, h, a: d["wafer"]["passes_per_step"] * d["plan"]["micro_batch"] *
     a * d["plan"]["seq_len"] ** 2 * L),
]


def nonneg_solve(a, y):
    """x >= 0 minimising sum (a x - y)^2 (a: rows of 3 columns): the best of the least-squares solutions over every
    choice of columns held at 0, among those with no negative entry. A half_length below 0 would be a GEMM faster
    than max_efficiency at small reductions, and a negative cost a time given back: neither is physical."""
    best, best_residual = [0.0, 0.0, 0.0], sum(v * v for v in y)
    for mask in range(1, 8):
        free = [i for i in range(3) if mask >> i & 1]
        # Normal equations on the free columns, solved by Gaussian elimination.
        n = len(free)
        m = [[sum(r[i] * r[j] for r in a) for j in free] + [sum(r[i] * v for r, v in zip(a, y))] for i in free]
        try:
            for c in range(n):
                p = max(range(c, n), key=lambda k: abs(m[k][c]))
                m[c], m[p] = m[p], m[c]
                for k in range(n):
                    if k != c:
                        f = m[k][c] / m[c][c]
                        m[k] = [u - f * w for u, w in zip(m[k], m[c])]
            xs = [m[c][n] / m[c][c] for c in range(n)]
        except ZeroDivisionError:
            continue
        if min(xs) < 0:
            continue
        x = [0.0, 0.0, 0.0]
        for i, v in zip(free, xs):
            x[i] = v
        residual = sum((sum(c * xi for c, xi in zip(r, x)) - v) ** 2 for r, v in zip(a, y))
        if residual < best_residual - 1e-15:
            best, best_residual = x, residual
    return best


def candidates(cs2, cs3, tmp):
    """Each candidate's coefficient and the two half_lengths, fitted on the three calibration runs (max_efficiency
    held at 1): step = rest + M + C0 / max_efficiency + w * C1 + b * count, linear in (w2, w3, b). The rest of the
    step (streaming, fabric, the MemoryX tail) is taken from a run at the current fit."""
    emax = 1.0
    halves = {CS2: float(re.search(r"half_length: ([0-9.]+)", cs2)[1]),
              CS3: float(re.search(r"half_length: ([0-9.]+)", cs3)[1])}
    texts = {CS2: cs2, CS3: cs3}
    runs = [(s, b, sps, CS2, "calibration") for s, b, sps in CS2_RUNS] + \
           [(s, b, sps, CS3, "calibration") for s, b, sps in CS3_RUNS] + [r + ("check",) for r in CHECK_RUNS]
    rows = []
    for s, batch, sps, hw, role in runs:
        m, c0, c1 = terms(s, texts[hw], tmp)
        d = run_json(s, texts[hw], emax, halves[hw], tmp)
        rest = d["step_time_s"] - d["breakdown"]["compute_s"]
        rows.append((s, batch / sps, hw, role, rest + m + c0 / emax, c1, d, model_shape(s)))
    print(f"Candidate costs, each fitted with the half_lengths on the calibration runs (max_efficiency {emax}); "
          "checks' errors in throughput (positive: simulated faster)")
    cal = [r for r in rows if r[3] == "calibration"]

    def half_lengths_alone(extra):
        """w = half_length / max_efficiency of each system by least squares, given each run's extra seconds."""
        return [sum((r[1] - r[4] - extra(r)) * r[5] / r[1] ** 2 for r in cal if r[2] == hw) /
                sum((r[5] / r[1]) ** 2 for r in cal if r[2] == hw) for hw in (CS2, CS3)]

    none = lambda d, L, h, a: 0.0
    for name, count in [("none (the GEMM model alone)", none)] + CANDIDATES:
        b = -1.0
        if count is not none:
            # Relative step-time error of each calibration run set to zero: (base + w C1 + b n) / target = 1.
            a = [[r[5] / r[1] if r[2] == CS2 else 0.0, r[5] / r[1] if r[2] == CS3 else 0.0,
                  count(r[6], *r[7]) / r[1]] for r in cal]
            # Both half_lengths and the cost bounded by 0 (exact where the unbounded solution has none below 0).
            w2, w3, b = nonneg_solve(a, [1 - r[4] / r[1] for r in cal])
        if b <= 0:  # the candidate is not there: its cost held at 0, the half_lengths fitted alone
            b = 0.0
            w2, w3 = half_lengths_alone(lambda r: 0.0)
        errors = []
        for s, target, hw, role, base, c1, d, shape in rows:
            step = base + (w2 if hw == CS2 else w3) * c1 + b * count(d, *shape)
            if role == "check":
                errors.append(target / step - 1)
        mae = sum(abs(e) for e in errors) / len(errors)
        print(f"  {name}: {b:.3g} s each, half_length CS-2 {w2 * emax:.1f}, CS-3 {w3 * emax:.1f}; checks "
              + ", ".join(f"{100 * e:+.1f}%" for e in errors) + f"; mean absolute {100 * mae:.1f}%")


# The micro batches Cerebras ships in its model zoo (csx.performance.micro_batch_size at Release_2.10.0 @f1fd1e09;
# Cerebras-GPT at Release_1.8.0, per system) and those the compiler logged (ESM-2 35M; BERT-Large b512, b1024 and
# b2048 under release 2.1.1, tests/validation/cerebras_wafer.csv), shared/reference/cerebras.md sections 1 and 3: (label, model, model overrides, hardware, sequence, samples per
# system, micro batch). Every configuration whose model dtsim can describe (Llama 3.2 1B/3B and ESM-2 650M/3B/15B
# by their published shapes over a model of the same family); left out: DINOv2, LLaVA, Zephyr DPO (several inputs
# per sample), Gemma 2 (local attention, soft caps), BTLM and Jais (ALiBi, muP), Mistral and Mixtral (sliding
# window; experts).
LLAMA = "models/llama3-8b.yaml"
ESM = "models/esm2-t12-35m.yaml"
LLAMA_1B = ["hidden_size=2048", "num_hidden_layers=16", "num_attention_heads=32", "num_key_value_heads=8",
            "intermediate_size=8192", "tie_word_embeddings=true"]
LLAMA_3B = ["hidden_size=3072", "num_hidden_layers=28", "num_attention_heads=24", "num_key_value_heads=8",
            "intermediate_size=8192", "tie_word_embeddings=true"]
LLAMA_70B = ["hidden_size=8192", "num_hidden_layers=80", "num_attention_heads=64", "intermediate_size=28672"]
LLAMA_405B = ["hidden_size=16384", "num_hidden_layers=126", "num_attention_heads=128", "intermediate_size=53248"]
ESM_650M = ["hidden_size=1280", "num_hidden_layers=33", "num_attention_heads=20", "intermediate_size=5120"]
ESM_3B = ["hidden_size=2560", "num_hidden_layers=36", "num_attention_heads=40", "intermediate_size=10240"]
ESM_15B = ["hidden_size=5120", "num_hidden_layers=48", "num_attention_heads=40", "intermediate_size=20480"]
SHIPPED = [
    ("GPT-3 XL 1.3B, 2K", "models/gpt3-xl-1.3b.yaml", [], CS3, 2048, 528, 88),
    ("Llama-3.1-8B, 8K", LLAMA, [], CS3, 8192, 960, 20),
    ("Llama-3.2-1B, 8K", LLAMA, LLAMA_1B, CS3, 8192, 1024, 8),
    ("Llama-3.2-3B, 8K", LLAMA, LLAMA_3B, CS3, 8192, 1024, 8),
    ("Llama-3.1-70B, 8K", LLAMA, LLAMA_70B, CS3, 8192, 8, 8),
    ("Llama-3.1-8B, 128K", LLAMA, [], CS3, 131072, 4, 1),
    ("Llama-3.1-70B, 128K", LLAMA, LLAMA_70B, CS3, 131072, 16, 1),
    ("Llama-3.1-405B, 128K", LLAMA, LLAMA_405B, CS3, 131072, 2, 1),
    ("ESM-2 650M", ESM, ESM_650M, CS3, 1026, 2048, 256),
    ("ESM-2 3B", ESM, ESM_3B, CS3, 1026, 2048, 256),
    ("ESM-2 15B", ESM, ESM_15B, CS3, 1026, 171, 171),
    ("DiT-2B", "models/dit-2b.yaml", [], CS3, 256, 1168, 1168),
    ("Cerebras-GPT 1.3B (R1.8)", "models/gpt3-xl-1.3b.yaml", [], CS2, 2048, 132, 132),
    ("Cerebras-GPT 6.7B (R1.8)", "models/gpt3-6.7b.yaml", [], CS2, 2048, 130, 65),
    ("Cerebras-GPT 13B (R1.8)", "models/gpt3-13b.yaml", [], CS2, 2048, 90, 90),
    ("ESM-2 35M, logged (R2.3)", ESM, [], CS2, 1026, 2048, 64),
    ("BERT-Large b512, logged (R2.1.1)", "models/bert-large.yaml", [], CS2, 128, 512, 512),
    ("BERT-Large b1024, logged (R2.1.1)", "models/bert-large.yaml", [], CS2, 128, 1024, 1024),
    ("BERT-Large b2048, logged (R2.1.1)", "models/bert-large.yaml", [], CS2, 128, 2048, 2048),
]


def sram_at(model, overrides, hw, seq, micro, tmp):
    """(on-wafer SRAM needed, capacity) with `micro` samples per pass, weight streaming, the compiler's
    recomputation (one pass: the SRAM does not depend on the number of passes)."""
    path = os.path.join(tmp, "survey.yaml")
    open(path, "w").write(f"name: survey\nmodel: {os.path.join(ROOT, model)}\nhardware: {hw}\ndevices: 1\n"
                          f"parallel:\n  dp: 1\nwafer:\n  mode: weight-streaming\ntraining:\n  global_batch: {micro}\n"
                          f"  seq_len: {seq}\n  micro_batch: {micro}\n  precision: bf16\n")
    args = [DTSIM, "run", path, "--format", "json", "--set", f"model.max_position_embeddings={max(seq, 2048)}"]
    for o in overrides:
        args += ["--set", "model." + o]
    out = subprocess.run(args, capture_output=True, text=True)
    need = re.search(r"on-wafer SRAM needs ([0-9.]+) GiB .* of ([0-9.]+) GiB", out.stderr)
    if out.returncode == 3 and need:  # does not fit: the message gives both
        return float(need.group(1)) * 2**30, float(need.group(2)) * 2**30
    if out.returncode != 0:
        sys.exit(f"dtsim failed on the survey's {model} {overrides}:\n{out.stderr}")
    w = json.loads(out.stdout)["wafer"]
    return w["sram_bytes"], w["sram_capacity_bytes"]


def micro_batch_survey(tmp):
    """Each shipped configuration's on-wafer SRAM at its micro batch, as a fraction of the wafer's (its fill), and
    the largest micro batch that would fit (SRAM is affine in the micro batch: two runs give it)."""
    print(f"{'configuration':34s} {'system batch':>12s} {'micro batch':>11s} {'tokens/pass':>11s} "
          f"{'SRAM GiB':>9s} {'fill':>6s} {'largest fitting divisor':>23s}")
    rows = []
    for label, model, overrides, hw, seq, batch, micro in SHIPPED:
        s1, cap = sram_at(model, overrides, hw, seq, 1, tmp)
        s2, _ = sram_at(model, overrides, hw, seq, 2, tmp)
        per = s2 - s1
        at = s1 + per * (micro - 1)
        fit = max([d for d in range(1, batch + 1) if batch % d == 0 and s1 + per * (d - 1) <= cap] or [0])
        rows.append((label, batch, micro, at / cap, s1, per, cap))
        print(f"{label:34s} {batch:12d} {micro:11d} {micro * seq:11d} {at / 2**30:9.1f} {at / cap:6.2f} {fit:23d}")
    return rows


# The models measured on both systems: (label, CS-2 run, CS-3 run), each run (scenario, samples per system, measured
# step s); the steps as in CHECK_RUNS (ESM-2 35M: releases 2.3.0 and 2.5.0; DiT-2B: 2.4.0 and 2.5.0). GPT-J 6B is
# not a pair here: 60 samples per CS-2 and 120 per CS-3 are the same samples per peak, which cannot split a step.
SYSTEM_PAIRS = [("ESM-2 35M", ("scenarios/validation/cerebras-esm2-35m-cs2.yaml", 2048, 2048 / 585.88),
                 ("scenarios/validation/cerebras-esm2-35m-cs3.yaml", 2048, 2.09)),
                ("DiT-2B", ("scenarios/validation/cerebras-dit-2b-cs2.yaml", 1100, 1100 / 405.45),
                 ("scenarios/validation/cerebras-dit-2b-cs3.yaml", 1168, 1.333))]
# How much faster a CS-3 works through a sample than a CS-2, measured per sample on the same shape (the steps of
# CHECK_RUNS and CS2_RUNS): Llama (7B on a CS-2, b99, 4.8431 s; Llama 2 7B, one shape, on a CS-3, b1024, 32.02 s)
# 1.56, GPT-J 6B (60 samples per CS-2 in 2.74788 s, 120 per CS-3 in 2.68156 s) 2.05, DiT-2B 2.16; 2: the peaks' ratio.
CS3_SPEEDUPS = [(4.8431 / 99) / (32.02 / 1024), 2.0, (2.7130 / 1100) / (1.333 / 1168)]


def step_s(scenario, hw_text, tmp):
    path = os.path.join(tmp, "hw.yaml")
    open(path, "w").write(hw_text)
    out = subprocess.run([DTSIM, "run", os.path.join(ROOT, scenario), "--set", f"hardware={path}", "--format", "json"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["step_time_s"]


def split_pair(t2, n2, t3, n3, speedup):
    """step = fixed + samples x per-sample work / speed on both systems (speed 1 on CS-2, speedup on CS-3):
    (fixed part, part that scales with the wafer on CS-2)."""
    work = (t2 - t3) / (n2 - n3 / speedup)
    return t2 - n2 * work, n2 * work


def system_pairs(cs2, cs3, tmp):
    """Each pair's measured steps split into a fixed part and a part that scales with the wafer's speed, at each
    measured CS-3 speed-up; against them, dtsim's kernel switches (wafer.kernel_switch, a fixed cost) and the rest
    of its CS-2 step."""
    print("CS-3 speed-ups per sample: " + ", ".join(f"{r:.2f}" for r in CS3_SPEEDUPS))
    print("| model | measured CS-2 / CS-3 step | simulated | measured fixed part | simulated kernel switches (CS-2) "
          "| measured part that scales (CS-2) | simulated rest (CS-2) |")
    print("|---|--:|--:|--:|--:|--:|--:|")
    for label, (s2, n2, m2), (s3, n3, m3) in SYSTEM_PAIRS:
        t2, t3 = step_s(s2, cs2, tmp), step_s(s3, cs3, tmp)
        switches = t2 - step_s(s2, re.sub(r"kernel_switch: [0-9.]+ ms", "kernel_switch: 0 ms", cs2), tmp)
        splits = [split_pair(m2, n2, m3, n3, r) for r in CS3_SPEEDUPS]
        fixed = " / ".join(f"{f:+.3f}" for f, _ in splits)
        scaling = " / ".join(f"{c:.3f}" for _, c in splits)
        print(f"| {label} | {m2:.3f} / {m3:.3f} s | {t2:.3f} / {t3:.3f} s | {fixed} s | {switches:.3f} s "
              f"| {scaling} s | {t2 - switches:.3f} s |")


def main():
    write = "--write" in sys.argv
    if "--micro-batch-survey" in sys.argv:
        with tempfile.TemporaryDirectory() as tmp:
            micro_batch_survey(tmp)
        return
    if "--system-pairs" in sys.argv:
        with tempfile.TemporaryDirectory() as tmp:
            system_pairs(open(CS2).read(), open(CS3).read(), tmp)
        return
    if "--candidates" in sys.argv:
        with tempfile.TemporaryDirectory() as tmp:
            candidates(open(CS2).read(), open(CS3).read(), tmp)
        return
    cs2, cs3 = open(CS2).read(), open(CS3).read()
    with tempfile.TemporaryDirectory() as tmp:
        emax, half, rows = fit(CS2_RUNS, cs2, tmp)
        emax, half = round(emax, 4), round(half, 1)  # as written to the hardware file
        report(CS2_RUNS, cs2, tmp, emax, half, "CS-2, fitted on both calibration runs")
        print("\nLeave one out (half_length fitted on the other run with max_efficiency 1, predict the one left out):")
        for i, held in enumerate(CS2_RUNS):
            e2, h2, _ = fit([r for j, r in enumerate(CS2_RUNS) if j != i], cs2, tmp, fixed_emax=1.0)
            _, _, sim = run(held[0], cs2, e2, h2, tmp)
            print(f"  {os.path.basename(held[0])}: fit {e2:.4f} / {h2:.1f}, {sim:.2f} samples/s against "
                  f"{held[2]:g} ({100 * (sim / held[2] - 1):+.1f}%)")
        print("\nLeave one out among three CS-2 runs (the two calibration runs and the Llama 7B check; both parameters "
              "fitted on the other two, bounded as above):")
        three = CS2_RUNS + CS2_LOO_EXTRA
        for i, held in enumerate(three):
            e2, h2, _ = fit([r for j, r in enumerate(three) if j != i], cs2, tmp)
            _, _, sim = run(held[0], cs2, e2, h2, tmp)
            print(f"  {os.path.basename(held[0])}: fit {e2:.4f} / {h2:.1f}, {sim:.2f} samples/s against "
                  f"{held[2]:.2f} ({100 * (sim / held[2] - 1):+.1f}%)")
        _, h3, _ = fit(CS3_RUNS, cs3, tmp, fixed_emax=emax, start=(emax, half))
        h3 = round(h3, 1)
        print()
        report(CS3_RUNS, cs3, tmp, emax, h3, "CS-3, half_length on its own run, max_efficiency as CS-2's")
        print("\nChecks (not fitted on): simulated / measured - 1 in step time")
        fitted = {CS2: with_gemm(cs2, emax, half), CS3: with_gemm(cs3, emax, h3)}
        errors = []
        for s, batch, sps, hw in CHECK_RUNS:
            _, _, sim = run(s, fitted[hw], emax, half if hw == CS2 else h3, tmp)
            errors.append(sps / sim - 1)
            print(f"  {os.path.basename(s)}: {sim:.2f} samples/s against {sps:.2f} ({100 * (sim / sps - 1):+.1f}% in "
                  f"throughput, {100 * errors[-1]:+.1f}% in step time)")
    if write:
        runs = len(CS2_RUNS) + len(CS3_RUNS)
        open(CS2, "w").write(with_calibration(with_gemm(cs2, emax, half), runs, errors))
        open(CS3, "w").write(with_calibration(with_gemm(cs3, emax, h3), runs, errors))
        print("\nwritten to hardware/cerebras-cs2.yaml and hardware/cerebras-cs3.yaml")


def with_calibration(hw_text, runs, errors):
    """The calibration section: the runs fitted and the checks' errors (simulated / measured - 1, step time)."""
    block = (f"  calibration:                   # scripts/calibrate_wafer.py: the checks' step-time errors\n"
             f"    runs: {runs}\n    heldout_errors: [" + ", ".join(f"{e:.4f}" for e in errors) + "]\n")
    hw_text = re.sub(r"  calibration:.*\n    runs: .*\n    heldout_errors: .*\n", "", hw_text)
    return hw_text.replace("  power:", block + "  power:", 1)


if __name__ == "__main__":
    main()
