"""dtsim from Python (python/dtsim): each function against the program's own output, the errors as exceptions,
dict scenarios, sweeps as rows, and a crash or a Ctrl-C of the simulation that leaves the interpreter standing."""
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import dtsim

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TINY = os.path.join(ROOT, "scenarios", "tiny.yaml")


@pytest.fixture(autouse=True)
def in_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def cli_json(*args):
    out = subprocess.run([dtsim.program(), *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def test_run_returns_the_same_record_as_the_program():
    assert dtsim.run(TINY) == cli_json("run", TINY, "--format", "json")


def test_set_overrides_keys():
    record = dtsim.run(TINY, set={"parallel.tp": 1, "parallel.dp": 4})
    assert record["plan"]["tp"] == 1 and record["plan"]["dp"] == 4
    assert record == cli_json("run", TINY, "--format", "json", "--set", "parallel.tp=1", "--set", "parallel.dp=4")


def test_none_unsets_a_key():
    record = dtsim.run(TINY, set={"parallel.pp": None})
    assert record["plan"]["pp"] == 1 and record["plan"]["dp"] == 8
    assert record == cli_json("run", TINY, "--format", "json", "--unset", "parallel.pp")
    rows = dtsim.sweep(TINY, vary={"parallel.tp": [1, 2]}, set={"parallel.pp": None}, progress=False)
    pps = rows["plan.pp"].tolist() if hasattr(rows, "columns") else [r["plan.pp"] for r in rows]
    assert pps == [1, 1]


def test_a_key_without_effect_is_a_python_warning():
    with pytest.warns(dtsim.DtsimWarning, match="training.fp8_recipe: 'current' has no effect"):
        record = dtsim.run(TINY, set={"training.fp8_recipe": "current"})
    assert record == dtsim.run(TINY)


def test_samples_and_seed_reach_the_program():
    spread = {"variability.device_spread": 0.05}
    record = dtsim.run(TINY, set=spread, samples=3, seed=4)
    assert record["variability"]["samples"] == 3 and record["variability"]["seed"] == 4
    assert set(record["step_time_spread_s"]) == {"p5", "p50", "p95"}
    assert record == cli_json("run", TINY, "--format", "json", "--set", "variability.device_spread=0.05",
                              "--samples", "3", "--seed", "4")


def test_a_scenario_can_be_a_dict_with_paths_from_the_current_folder():
    scenario = {"name": "tiny-from-a-dict", "model": "models/gpt2-small.yaml", "hardware": "hardware/dgx-a100-80gb.yaml",
                "devices": 8, "parallel": {"tp": 2, "pp": 1},
                "training": {"global_batch": 32, "micro_batch": 4, "seq_len": 1024, "flash_attention": True}}
    record = dtsim.run(scenario)
    assert record["scenario"] == "tiny-from-a-dict"
    assert record["step_time_s"] > 0


def test_bad_input_raises_input_error_with_file_line_and_key():
    with pytest.raises(dtsim.InputError) as e:
        dtsim.run(TINY, set={"parallel.tp": 3})
    assert e.value.exit_code == 2
    assert "tiny.yaml:5:10: error: parallel.dp: cannot derive dp" in e.value.message
    with pytest.raises(dtsim.InputError) as e:
        dtsim.validate(os.path.join(ROOT, "tests", "config_errors", "scenario-duplicate-key.yaml"))
    assert "scenario-duplicate-key.yaml:8:1" in e.value.message


def test_a_plan_that_does_not_fit_raises_does_not_fit_with_its_memory():
    with pytest.raises(dtsim.DoesNotFit) as e:
        dtsim.run(TINY, set={"hardware.device.memory": "1 GiB"})
    assert e.value.exit_code == 3
    assert e.value.record is not None and e.value.record["fits"] is False


def test_validate_and_explain_return_text():
    assert dtsim.validate(TINY).endswith(")")
    assert "ok" in dtsim.validate(TINY)
    assert "FLOP" in dtsim.explain(TINY)


def test_sweep_gives_one_row_per_point():
    rows = dtsim.sweep(TINY, vary={"parallel.tp": [1, 2], "training.micro_batch": [2, 4]}, progress=False)
    if not isinstance(rows, list):  # a pandas DataFrame
        rows = rows.to_dict("records")
    steps = sorted(r["step_time_s"] for r in rows)
    assert len(rows) == 4
    assert sorted((r["vary.parallel.tp"], r["vary.training.micro_batch"]) for r in rows) == [(1, 2), (1, 4), (2, 2),
                                                                                            (2, 4)]
    assert all("breakdown.bubble_s" in r for r in rows)
    expected = sorted(dtsim.run(TINY, set={"parallel.tp": tp, "training.micro_batch": mb})["step_time_s"]
                      for tp in (1, 2) for mb in (2, 4))
    assert steps == pytest.approx(expected, rel=1e-12)


# Keys given in `set` are the sweep's constants: they once came back as vary.* columns beside the varied ones (qa15).
def test_set_keys_are_not_varied_columns():
    table = dtsim.sweep(TINY, vary={"parallel.tp": [1, 2]}, set={"training.micro_batch": 2}, progress=False)
    rows = table if isinstance(table, list) else table.to_dict("records")
    assert [k for k in rows[0] if k.startswith("vary.")] == ["vary.parallel.tp"]
    assert [r["plan.micro_batch"] for r in rows] == [2, 2]
    if not isinstance(table, list):
        assert table.attrs["set"] == {"training.micro_batch": 2}


def test_linked_keys_vary_side_by_side(tmp_path):
    rows = dtsim.sweep(TINY, vary={"devices;parallel.dp": [(8, 1), (16, 2)]}, out=tmp_path / "s", progress=False)
    assert len(rows) == 2
    assert (tmp_path / "s.csv").exists()


def test_search_ranks_plans():
    rows = dtsim.search(os.path.join(ROOT, "tests", "unit", "data", "sweep", "tiny-8.yaml"), narrow=True, top=3,
                        progress=False)
    if not isinstance(rows, list):
        rows = rows.to_dict("records")
    assert [r["rank"] for r in rows] == [1, 2, 3]
    assert rows[0]["step_time_s"] <= rows[1]["step_time_s"] <= rows[2]["step_time_s"]


def test_compare_puts_scenarios_side_by_side():
    doc = dtsim.compare([TINY, TINY], set={"training.micro_batch": 2}, burden=False, progress=False)
    assert len(doc["scenarios"]) == 2
    assert doc["scenarios"][0]["step_time_s"] == pytest.approx(
        dtsim.run(TINY, set={"training.micro_batch": 2})["step_time_s"], rel=1e-12)


def test_a_crash_of_the_program_is_an_internal_error_not_a_dead_interpreter(tmp_path):
    crasher = tmp_path / "crash.sh"
    crasher.write_text("#!/bin/sh\nkill -SEGV $$\n")
    crasher.chmod(0o755)
    old = os.environ.get("DTSIM_PROGRAM")
    os.environ["DTSIM_PROGRAM"] = str(crasher)
    try:
        with pytest.raises(dtsim.InternalError) as e:
            dtsim.run(TINY)
        assert e.value.exit_code == -signal.SIGSEGV
    finally:
        if old is None:
            del os.environ["DTSIM_PROGRAM"]
        else:
            os.environ["DTSIM_PROGRAM"] = old
    assert dtsim.run(TINY)["step_time_s"] > 0  # and the module still works


def test_ctrl_c_stops_the_simulation_and_its_children(tmp_path):
    sleeper = tmp_path / "slow.sh"
    marker = tmp_path / "child.pid"
    # A program that forks a child and waits: both must be gone after the interrupt.
    sleeper.write_text("#!/bin/sh\nsleep 60 &\necho $! > %s\nwait\n" % marker)
    sleeper.chmod(0o755)
    os.environ["DTSIM_PROGRAM"] = str(sleeper)
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    try:
        timer.start()
        start = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            dtsim.run(TINY)
        assert time.monotonic() - start < 10
    finally:
        timer.cancel()
        del os.environ["DTSIM_PROGRAM"]
    child = int(marker.read_text())
    time.sleep(0.2)
    assert not running(child)


def running(pid):
    """Whether `pid` still runs (a killed process waiting to be reaped by init does not)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def test_calibrate_fits_a_stack_that_reproduces_the_measured_step(tmp_path):
    runs = tmp_path / "runs.csv"
    runs.write_text("scenario,measured_step_time_s,label\n%s,0.0050,tiny\n" % TINY)
    report = dtsim.calibrate(runs, tmp_path / "stack.yaml")
    assert "fitted factors: compute" in report
    step = dtsim.run(TINY, set={"stack": str(tmp_path / "stack.yaml")})["step_time_s"]
    assert step == pytest.approx(0.0050, rel=0.005)
    with pytest.raises(dtsim.InputError) as e:
        dtsim.calibrate(runs, tmp_path / "x.yaml", fit=["compute", "communication"])
    assert "expected at most as many factors as runs" in e.value.message
