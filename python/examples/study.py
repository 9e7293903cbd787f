"""A study from Python (docs/python.md): GPT-3 175B on A100s, what the NIC bandwidth is worth and how the step
scales with the cluster, drawn with matplotlib.

    PYTHONPATH=build/python python3 python/examples/study.py docs/img/python-study.png
"""
import sys

import dtsim

SCENARIO = "scenarios/default.yaml"  # GPT-3 175B on 1,024 A100 (tp 8, pp 16, dp 8)

# 1. What if the NICs were slower or faster? One key, five values.
whatif = dtsim.sweep(SCENARIO, vary={"hardware.network.nic.bandwidth": ["50 Gb/s", "100 Gb/s", "200 Gb/s",
                                                                         "400 Gb/s", "800 Gb/s"]})
# 2. Strong scaling: the same global batch on 256 to 4,096 GPUs, dp growing with the devices.
scaling = dtsim.sweep(SCENARIO, vary={"devices;parallel.dp": [(256, 2), (512, 4), (1024, 8), (2048, 16),
                                                              (4096, 32)]})


def column(rows, key):
    """A column of the rows (a pandas DataFrame where pandas is installed, else a list of dicts)."""
    return [r[key] for r in rows] if isinstance(rows, list) else list(rows[key])


nic = [float(v.split()[0]) for v in column(whatif, "vary.hardware.network.nic.bandwidth")]
step = column(whatif, "step_time_s")
dp_exposed = column(whatif, "breakdown.exposed_dp_comm_s")
devices = column(scaling, "vary.devices")
samples = column(scaling, "samples_per_s")

print("NIC (Gb/s)  step (s)  exposed DP (s)")
for n, s, d in zip(nic, step, dp_exposed):
    print("%10.0f  %8.3f  %14.3f" % (n, s, d))
print("GPUs   samples/s   efficiency against 256")
for g, s in zip(devices, samples):
    print("%5d  %10.2f   %5.1f%%" % (g, s, 100 * (s / samples[0]) / (g / devices[0])))

if len(sys.argv) > 1:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.8))
    a.plot(nic, step, "o-", label="step time")
    a.plot(nic, dp_exposed, "s--", label="exposed data-parallel communication")
    a.set_xscale("log", base=2)
    a.set_xlabel("NIC bandwidth (Gb/s)")
    a.set_ylabel("seconds")
    a.set_title("GPT-3 175B on 1,024 A100: the NIC")
    a.legend()
    b.plot(devices, samples, "o-", label="simulated")
    b.plot(devices, [samples[0] * g / devices[0] for g in devices], ":", label="linear")
    b.set_xscale("log", base=2)
    b.set_yscale("log", base=2)
    b.set_xlabel("GPUs")
    b.set_ylabel("samples/s")
    b.set_title("strong scaling, global batch 1,536")
    b.legend()
    fig.tight_layout()
    fig.savefig(sys.argv[1], dpi=110)
    print("wrote", sys.argv[1])
