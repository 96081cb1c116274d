"""What the device runs' comparison scripts (validation/fsdp/run36/compare.py, run38/compare.py) share: the host
costs validate_fsdp sets on every row (Mechanisms::eager_host; validation/h200_compare.h, microseconds) and one
`mfusim run --json` of a scenario with --set overrides."""
import json, subprocess

HOST = {"host_overhead_us": 31.02, "host_compiled_overhead_us": (383.2 + 353.2 + 399.6 + 401.1) / 4,
        "host_backward_overhead_us": 26.24, "host_checkpoint_overhead_us": 728.3, "host_recompute_overhead_us": 951.3}


def run_json(mfusim, toml, sets):
    """The JSON report of `mfusim run TOML --json --set S ...` with validate_fsdp's host costs added."""
    sets = list(sets) + [f"hardware.{k}={v}" for k, v in HOST.items()]
    cmd = [mfusim, "run", toml, "--json"] + sum([["--set", s] for s in sets], [])
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
