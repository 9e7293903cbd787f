"""dtsim from Python: simulate training steps and whole runs of large models on GPU clusters and wafer-scale systems.

Every function runs the dtsim program in a child process (dtsim/_native.cpp), so that a crash never takes the
interpreter down and Ctrl-C stops the simulation, and returns what ``--format json`` prints, as Python objects:

    import dtsim
    record = dtsim.run("scenarios/default.yaml", set={"parallel.tp": 4, "parallel.pp": 32})
    record["step_time_s"], record["breakdown"]["bubble_s"]

A scenario is a path, or a dict with the keys of a scenario file (relative paths in it are taken from the current
folder). Bad input raises InputError (exit code 2), a plan that does not fit DoesNotFit (exit code 3), anything
else InternalError; each carries the program's message, with file:line:column where it has them. See docs/python.md.
"""

import json
import os
import re
import sys
import tempfile
import warnings

from . import _native

__all__ = ["run", "validate", "explain", "compare", "search", "sweep", "calibrate", "program",
           "DtsimError", "DtsimWarning", "InputError", "DoesNotFit", "InternalError"]


class DtsimWarning(UserWarning):
    """What the program warns about on standard error: a key the scenario gives that has no effect."""


class DtsimError(Exception):
    """A dtsim command that did not succeed: `exit_code` and `message` (the program's standard error)."""

    def __init__(self, message, exit_code, record=None):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.record = record  # what the command printed, where it printed a record (a plan that does not fit)


class InputError(DtsimError):
    """The inputs are wrong (exit code 2): the message names the file, line, key, what was expected and found."""


class DoesNotFit(DtsimError):
    """The plan cannot run (exit code 3): it does not fit in memory; `record` holds the memory report."""


class InternalError(DtsimError):
    """dtsim itself failed: an internal error, or the simulation process crashed (exit code -N: signal N)."""


def program():
    """The dtsim program the module runs: $DTSIM_PROGRAM, else the one built with the module."""
    return os.environ.get("DTSIM_PROGRAM", _native.program)


# --- arguments --------------------------------------------------------------------------------------------------


def _value_text(value):
    """A Python value as `--set KEY=VALUE` takes it (YAML): true/false, [1, 2], or the text itself."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value)
    return str(value)


def _set_args(set):
    if not set:
        return []
    if not isinstance(set, dict):
        raise TypeError("set: expected a dict of scenario keys to values, such as {'parallel.tp': 4}, got %r" % (set,))
    args = []
    for key, value in set.items():
        # None removes a key the scenario gives (--unset), e.g. {"parallel.pp": 2, "parallel.stage_layers": None}
        args += ["--unset", key] if value is None else ["--set", "%s=%s" % (key, _value_text(value))]
    return args


class _Scenarios:
    """Scenario paths for the command line; dicts are written to temporary files, removed on close."""

    def __init__(self):
        self._dir = None

    def path(self, scenario):
        if isinstance(scenario, (str, os.PathLike)):
            return os.fspath(scenario)
        if not isinstance(scenario, dict):
            raise TypeError("scenario: expected a path or a dict of scenario keys, got %r" % (scenario,))
        if self._dir is None:
            self._dir = tempfile.TemporaryDirectory(prefix="dtsim-")
        doc = dict(scenario)
        # The files a scenario names are relative to its own folder: a dict's are relative to the current one.
        for key in ("model", "hardware", "stack"):
            value = doc.get(key)
            if isinstance(value, str) and value != "none" and not os.path.isabs(value):
                doc[key] = os.path.abspath(value)
        name = "scenario-%d.yaml" % len(os.listdir(self._dir.name))
        path = os.path.join(self._dir.name, name)
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)  # JSON is YAML
        return path

    def close(self):
        if self._dir is not None:
            self._dir.cleanup()


# --- running ----------------------------------------------------------------------------------------------------

_PROGRESS = re.compile(r"^(?P<what>.*?):? (?:\[[# ]*\] )?(?P<done>\d+)/(?P<total>\d+) (?P<unit>\w+)")


class _Progress:
    """dtsim's progress lines, shown as a tqdm bar where tqdm is installed, else as the lines themselves."""

    def __init__(self, show):
        self.show = show
        self.bar = None
        try:
            import tqdm.auto as tqdm_auto  # noqa: F401
            self._tqdm = tqdm_auto.tqdm
        except ImportError:
            self._tqdm = None

    def line(self, text):
        if not self.show:
            return
        m = _PROGRESS.match(text.strip())
        if m is None or self._tqdm is None:
            print(text.strip(), file=sys.stderr, flush=True)
            return
        total, done = int(m.group("total")), int(m.group("done"))
        if self.bar is None or self.bar.total != total or self.bar.desc != m.group("what"):
            self.close()
            self.bar = self._tqdm(total=total, desc=m.group("what"), unit=" " + m.group("unit"))
        self.bar.update(done - self.bar.n)

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _invoke(args, progress=False):
    """Runs `dtsim ARGS...`; returns its standard output as text, or raises the error its exit code names."""
    shown = _Progress(progress)
    try:
        code, out, err = _native.run_process([program()] + [str(a) for a in args],
                                             shown.line if progress else None)
    finally:
        shown.close()
    out = out.decode("utf-8", "replace")
    if code == 0:
        # A key the scenario gives without effect (file:line:col: warning: KEY: ...): a Python warning.
        for line in err.splitlines():
            if ": warning: " in line:
                warnings.warn(line, DtsimWarning, stacklevel=3)
        return out
    message = err.strip() or ("the dtsim program ended with exit code %d" % code)
    if code == 2:
        raise InputError(message, code)
    if code == 3:
        record = None
        try:
            record = json.loads(out) if out.strip() else None
        except ValueError:
            pass
        raise DoesNotFit(message if err.strip() else "the plan does not fit in memory", code, record)
    if code < 0:
        message = "the simulation process ended with signal %d: %s" % (-code, message)
    raise InternalError(message, code)


# --- the commands -----------------------------------------------------------------------------------------------


def run(scenario, set=None, trace=None, samples=None, seed=None):
    """Simulates one training step: the record of `dtsim run --format json` as a dict. `trace`: a file to write the
    Chrome trace-event timeline to. `samples`, `seed`: steps drawn under the scenario's variability and the seed of
    the draws (`dtsim run --samples N --seed S`; docs/variability.md). A plan that does not fit raises DoesNotFit
    (its `record` has the memory)."""
    files = _Scenarios()
    try:
        args = ["run", files.path(scenario), "--format", "json"] + _set_args(set)
        if trace is not None:
            args += ["--trace", os.fspath(trace)]
        if samples is not None:
            args += ["--samples", str(int(samples))]
        if seed is not None:
            args += ["--seed", str(int(seed))]
        out = _invoke(args)
    finally:
        files.close()
    return json.loads(out)


def validate(scenario, set=None):
    """Checks the scenario and the files it names, simulating nothing; returns the one-line summary. Raises
    InputError with every problem found."""
    files = _Scenarios()
    try:
        return _invoke(["validate", files.path(scenario)] + _set_args(set)).strip()
    finally:
        files.close()


def explain(scenario, set=None):
    """The work of one layer and what it costs (`dtsim explain`), as text."""
    files = _Scenarios()
    try:
        return _invoke(["explain", files.path(scenario)] + _set_args(set))
    finally:
        files.close()


def compare(scenarios, set=None, burden=True, jobs=None, progress=True):
    """Scenarios side by side (`dtsim compare --format json`): a dict with one entry per scenario under
    "scenarios" and the verdict. `burden`: also simulate every parallel plan of each GPU side (slow)."""
    files = _Scenarios()
    try:
        args = ["compare"] + [files.path(s) for s in scenarios] + ["--format", "json"] + _set_args(set)
        if not burden:
            args.append("--no-burden")
        if jobs is not None:
            args += ["--jobs", jobs]
        if not progress:
            args.append("--quiet")
        return json.loads(_invoke(args, progress))
    finally:
        files.close()


def _flat(row, prefix=""):
    """A record with its nested keys joined by dots, as `dtsim sweep` names its CSV columns."""
    out = {}
    for key, value in row.items():
        if isinstance(value, dict):
            out.update(_flat(value, prefix + key + "."))
        else:
            out[prefix + key] = value
    return out


def _number(text):
    """A varied value as a number where it is one ("1024", "0.5"), else the text ("400 Gb/s", "bf16")."""
    if not isinstance(text, str):
        return text
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _rows(rows):
    """Rows with flat keys ("breakdown.bubble_s", "vary.parallel.tp"; varied values that are numbers as numbers): a
    pandas DataFrame where pandas is installed, else a list of dicts."""
    rows = [{k: _number(v) if k.startswith("vary.") else v for k, v in _flat(r).items()} for r in rows]
    try:
        import pandas
    except ImportError:
        return rows
    return pandas.DataFrame(rows)


def search(scenario, set=None, devices=None, top=None, full_space=False, narrow=False, jobs=None, progress=True,
           ranking_only=True, exhaustive=False):
    """Every parallel plan for the scenario's model and cluster, simulated and ranked (`dtsim search`). Returns the
    ranking as rows, the best first (the `top` best where given; a DataFrame where pandas is installed);
    ranking_only=False returns the whole JSON document. Plans whose lower bound on the step time shows they cannot
    enter the top `top` (10 when not given) are not simulated unless exhaustive=True."""
    files = _Scenarios()
    try:
        args = ["search", files.path(scenario), "--format", "json"] + _set_args(set)
        if devices is not None:
            args += ["--devices", devices]
        if top is not None:
            args += ["--top", top]
        if full_space:
            args.append("--full-space")
        if narrow:
            args.append("--narrow")
        if exhaustive:
            args.append("--exhaustive")
        if jobs is not None:
            args += ["--jobs", jobs]
        if not progress:
            args.append("--quiet")
        doc = json.loads(_invoke(args, progress))
    finally:
        files.close()
    if not ranking_only:
        return doc
    return _rows(doc["ranking"][:top] if top is not None else doc["ranking"])


def _vary_args(vary):
    """{"key": [v1, v2]} as --vary key=v1,v2; {"a;b": [(a1, b1), (a2, b2)]} links a and b side by side."""
    args = []
    for key, values in vary.items():
        if isinstance(values, str):  # a range as dtsim writes it: "64..1024x2"
            args += ["--vary", "%s=%s" % (key, values)]
            continue
        values = list(values)
        keys = key.split(";")
        if len(keys) == 1:
            args += ["--vary", "%s=%s" % (key, ",".join(_value_text(v) for v in values))]
        else:
            columns = list(zip(*values))
            if len(columns) != len(keys):
                raise ValueError("vary: %r links %d keys; give each point as a tuple of %d values"
                                 % (key, len(keys), len(keys)))
            args += ["--vary", ";".join("%s=%s" % (k, ",".join(_value_text(v) for v in col))
                                        for k, col in zip(keys, columns))]
    return args


def sweep(scenarios, vary=None, set=None, out=None, jobs=None, progress=True):
    """Every point of the varied keys (`dtsim sweep`): one row per point, the varied values under "vary" and the
    run's record beside them (a DataFrame where pandas is installed). `scenarios`: one or several (an outer axis).
    `set`: keys fixed for every point (no vary.* column; a DataFrame lists them in .attrs["set"]). `out`: keep PREFIX.csv and PREFIX.jsonl there (a sweep with the same
    arguments resumes from them); by default they go to a temporary folder."""
    if isinstance(scenarios, (str, os.PathLike, dict)):
        scenarios = [scenarios]
    files = _Scenarios()
    tmp = None
    try:
        if out is None:
            tmp = tempfile.TemporaryDirectory(prefix="dtsim-sweep-")
            out = os.path.join(tmp.name, "sweep")
        args = ["sweep"] + [files.path(s) for s in scenarios] + ["--out", os.fspath(out)]
        args += _vary_args(vary or {})
        args += _vary_args({k: [v] for k, v in (set or {}).items() if v is not None})
        args += [a for k, v in (set or {}).items() if v is None for a in ("--unset", k)]
        if jobs is not None:
            args += ["--jobs", jobs]
        if not progress:
            args.append("--quiet")
        _invoke(args, progress)
        with open(os.fspath(out) + ".jsonl") as f:
            rows = [json.loads(line) for line in f if line.strip()]
    finally:
        files.close()
        if tmp is not None:
            tmp.cleanup()
    # `set` keys travel as one-value --vary axes (so that a resumed sweep with other fixed values is refused), but
    # they are the sweep's constants, not varied inputs: no vary.* column; a DataFrame keeps them in attrs["set"].
    fixed = {k: v for k, v in (set or {}).items() if v is not None}
    for row in rows:
        for key in fixed:
            row.get("vary", {}).pop(key, None)
    table = _rows(rows)
    if hasattr(table, "attrs"):
        table.attrs["set"] = dict(set or {})
    return table


def calibrate(runs_csv, out, stack=None, fit=None, check=None, name=None, jobs=None):
    """Fits a software stack's efficiency factors to measured step times (`dtsim calibrate`) and writes it to
    `out`; returns the command's report (the runs before and after, the held-out errors) as text."""
    args = ["calibrate", os.fspath(runs_csv), "--out", os.fspath(out)]
    if stack is not None:
        args += ["--stack", os.fspath(stack)]
    if fit:
        args += ["--fit", ",".join(fit) if not isinstance(fit, str) else fit]
    if check is not None:
        args += ["--check", os.fspath(check)]
    if name is not None:
        args += ["--name", name]
    if jobs is not None:
        args += ["--jobs", jobs]
    return _invoke(args)
