#!/usr/bin/env python3
"""Run 36's timed torchtitan steps simulated (tt-step.toml with each configuration) against the measured step
time (validation/runs/run36-tt-step-time/results/summary.csv: median of 6 steps between CUDA events), or, with
--predict, the simulated step alone (written into the run's README before the call). validate_fsdp's host costs
(validation/h200_compare.h: eager op, compiled region, backward op, checkpoint and recompute per layer) are set
as in its rows. Usage (repo root): validation/fsdp/run36/compare.py [build/mfusim] [--predict]"""
import csv, os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from sim_cli import run_json  # noqa: E402

root = os.path.dirname(os.path.abspath(__file__))
args = [a for a in sys.argv[1:] if not a.startswith("--")]
mfusim = args[0] if args else "build/mfusim"
predict = "--predict" in sys.argv
summary = os.path.join(root, "..", "..", "runs", "run36-tt-step-time", "results", "summary.csv")
AC = {"none": "none", "op": "selective-op", "full": "full"}
PLAN = [("fp8", "on", "op", 8), ("bf16", "on", "op", 8), ("fp8", "on", "op", 4), ("bf16", "on", "op", 4),
        ("bf16", "off", "op", 8), ("fp8", "off", "op", 8)]
configs = ([dict(prec=p, compile=c, mode=m, layers=str(n), seq="8192", mbs="2") for p, c, m, n in PLAN]
           if predict else list(csv.DictReader(open(summary))))


def sim(c):
    on = c["compile"] == "on"
    sets = [f"model.layers={c['layers']}", f"training.seq_len={c['seq']}", f"training.micro_batch={c['mbs']}",
            f"training.global_batch={c['mbs']}", f"features.recompute=\"{AC[c['mode']]}\"",
            f"training.precision=\"{c['prec']}\"", f"features.fused_kernels={'true' if on else 'false'}",
            f"features.cross_entropy=\"{'compiled' if on else 'fp32'}\""]
    j = run_json(mfusim, os.path.join(root, "tt-step.toml"), sets)
    return j["step_time_s"] * 1e3, j


def label(c):
    return f"| {c['prec']} | {c['compile']} | {c['mode']} | {c['layers']} x {c['seq']} x {c['mbs']} |"


if predict:
    print("| precision | compile | AC | layers x seq x mbs | sim step ms |")
    print("|---|---|---|---|---:|")
    for c in configs:
        ms, _ = sim(c)
        print(f"{label(c)} {ms:.1f} |")
    sys.exit(0)
print("| precision | compile | AC | layers x seq x mbs | measured ms | sim ms | error |")
print("|---|---|---|---|---:|---:|---:|")
for c in configs:
    ms, _ = sim(c)
    t = float(c["step_ms_median"])
    print(f"{label(c)} {t:.1f} | {ms:.1f} | {100 * (ms / t - 1):+.1f}% |")
