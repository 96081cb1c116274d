"""mfusim from Python (SPEC §4b).

    import mfusim
    r = mfusim.run("scenarios/128xh100_70b.toml", set={"parallel.pp": 8})
    r["mfu"], r["breakdown_s"]["bubble"]
    rows = mfusim.sweep("scenarios/128xh100_70b.toml", vary={"parallel.pp": [2, 4, 8]})

Each function returns what the command prints with --json, parsed by the json
module: run a dict, sweep/plan/diagnose a list of dicts. A scenario is a path
to a TOML file or a dict shaped like the file ({"model": "llama3-8b",
"cluster": {"gpus": 8}, ...}); relative paths in a dict resolve against the
current directory. Bad input raises mfusim.ScenarioError (a ValueError) whose
text is the CLI's "file:line:col: error: ..." lines.
"""
import json
import math
import os
import tempfile

from . import _core

ScenarioError = _core.ScenarioError
__all__ = ["run", "sweep", "plan", "diagnose", "merge", "to_toml", "ScenarioError"]


def _toml_key(k):
    k = str(k)
    if k and all(c.isalnum() or c in "-_" for c in k):
        return k
    return json.dumps(k)


def _toml_value(v, where):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ScenarioError(f"<scenario dict>: error: {where}: {v} is not a finite number")
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)   # a TOML basic string is a JSON string for these escapes
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x, where) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(x, where + '.' + str(k))}" for k, x in v.items()) + "}"
    raise ScenarioError(f"<scenario dict>: error: {where}: a {type(v).__name__} is not a TOML value")


def to_toml(scenario):
    """The TOML text of a scenario dict: tables for dicts, [[name]] for lists of dicts ([[whatif]])."""
    lines = []

    def table(d, prefix):
        scalars = [(k, v) for k, v in d.items() if not _is_table(v) and not _is_table_array(v)]
        for k, v in scalars:
            lines.append(f"{_toml_key(k)} = {_toml_value(v, prefix + str(k))}")
        for k, v in d.items():
            name = prefix + _toml_key(k)
            if _is_table(v):
                lines.append("")
                lines.append(f"[{name}]")
                table(v, name + ".")
            elif _is_table_array(v):
                for item in v:
                    lines.append("")
                    lines.append(f"[[{name}]]")
                    table(item, name + ".")

    if not isinstance(scenario, dict):
        raise ScenarioError("<scenario dict>: error: a scenario is a path or a dict")
    table(scenario, "")
    return "\n".join(lines) + "\n"


def _is_table(v):
    return isinstance(v, dict)


def _is_table_array(v):
    return isinstance(v, (list, tuple)) and len(v) > 0 and all(isinstance(x, dict) for x in v)


def _value_text(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _overrides(set, calibration):
    out = [f"{k}={_value_text(v)}" for k, v in (set or {}).items()]
    if calibration is not None:
        out.append(f"calibration={os.fspath(calibration)}")
    return out


class _Scenario:
    """A path as is; a dict written to a temporary TOML file for the call."""

    def __init__(self, scenario):
        self.dir = None
        if isinstance(scenario, dict):
            self.dir = tempfile.TemporaryDirectory(prefix="mfusim-")
            self.path = os.path.join(self.dir.name, "scenario.toml")
            with open(self.path, "w", encoding="utf-8") as f:
                f.write(to_toml(scenario))
            self.search_dirs = [os.getcwd()]
        else:
            self.path = os.fspath(scenario)
            self.search_dirs = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.dir is not None:
            self.dir.cleanup()


def _parse(text):
    return json.loads(text)


def run(scenario, set=None, calibration=None):
    """One step: the dict of `mfusim run --json` (SPEC §4)."""
    with _Scenario(scenario) as s:
        return _parse(_core.run_json(s.path, _overrides(set, calibration), s.search_dirs))


def _vary_args(vary):
    out = []
    for k, vs in (vary or {}).items():
        if isinstance(vs, (str, bytes)) or not hasattr(vs, "__iter__"):
            vs = [vs]
        out.append(f"{k}=" + ",".join(_value_text(v) for v in vs))
    return out


def sweep(scenario, vary, set=None, calibration=None, shard=None):
    """The cartesian product of `vary` ({key: [values]}): the list of `mfusim sweep --json`.

    With shard="K/N" only that slice runs and a part (a dict) comes back; merge() joins the parts."""
    with _Scenario(scenario) as s:
        return _parse(_core.sweep_json(s.path, _vary_args(vary), _overrides(set, calibration), s.search_dirs,
                                       shard or ""))


def plan(scenario, gpus=None, hardware=None, top=10, rank_by="step", set=None, calibration=None, headroom=None,
         framework="any", shard=None):
    """Ranked layouts: the list of `mfusim plan --json`.

    gpus: an int or a list of ints; hardware: a list of names (or "name@price"); headroom: GiB (a number) or
    "10%"; framework: megatron | torchtitan | deepspeed | any."""
    if gpus is None:
        g = ""
    elif isinstance(gpus, int):
        g = str(gpus)
    else:
        g = ",".join(str(x) for x in gpus)
    vary = [] if not hardware else ["hardware=" + ",".join(hardware if not isinstance(hardware, str) else [hardware])]
    with _Scenario(scenario) as s:
        return _parse(_core.plan_json(s.path, g, vary, int(top), rank_by, _overrides(set, calibration), s.search_dirs,
                                      "" if headroom is None else str(headroom), framework, shard or ""))


def diagnose(scenario, set=None, calibration=None):
    """The MFU levers, ranked: the list of `mfusim diagnose --json`."""
    with _Scenario(scenario) as s:
        return _parse(_core.diagnose_json(s.path, _overrides(set, calibration), s.search_dirs))


def merge(parts):
    """Merge the parts of a sharded sweep or plan (dicts, or paths of part files) as `mfusim merge` does."""
    with tempfile.TemporaryDirectory(prefix="mfusim-parts-") as d:
        paths = []
        for i, p in enumerate(parts):
            if isinstance(p, dict):
                path = os.path.join(d, f"part{i}.json")
                with open(path, "w", encoding="utf-8") as f:
                    json.dump(p, f)
                paths.append(path)
            else:
                paths.append(os.fspath(p))
        return _parse(_core.merge_json(paths))
