#!/usr/bin/env python3
"""Run 35's FSDP2 steps with head and loss simulated (fsdp2-head.toml with each configuration) against torch's
max allocated / max reserved (validation/runs/run35-step-loss-memory/results/summary.csv), or, with --predict,
the simulated figures alone (written into the run's README before the call). The simulator's 2 GiB runtime
reserve is taken off (torch's allocator counters do not hold it). Usage (repo root):
validation/fsdp/run35/compare.py [build/mfusim] [--predict]"""
import csv, json, os, subprocess, sys

root = os.path.dirname(os.path.abspath(__file__))
args = [a for a in sys.argv[1:] if not a.startswith("--")]
mfusim = args[0] if args else "build/mfusim"
predict = "--predict" in sys.argv
summary = os.path.join(root, "..", "..", "runs", "run35-step-loss-memory", "results", "summary.csv")
loss = {"eager": "fp32", "compiled": "compiled"}
configs = ([dict(loss=l, mode=m, layers="4", seq="8192", mbs=b) for l in ("eager", "compiled") for m in ("none", "full")
            for b in ("1", "2")] if predict else list(csv.DictReader(open(summary))))


def sim(c):
    sets = [f"model.layers={c['layers']}", f"training.seq_len={c['seq']}", f"training.micro_batch={c['mbs']}",
            f"training.global_batch={c['mbs']}", f"features.recompute=\"{c['mode']}\"",
            f"features.cross_entropy=\"{loss[c['loss']]}\""]
    cmd = [mfusim, "run", os.path.join(root, "fsdp2-head.toml"), "--json"] + sum([["--set", s] for s in sets], [])
    m = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)["memory"]
    return m["peak_gib"] - 2.0, m["peak_reserved_gib"] - 2.0


if predict:
    print("| loss | AC | layers x seq x mbs | sim allocated GiB | sim reserved GiB |")
    print("|---|---|---|---:|---:|")
    for c in configs:
        a, r = sim(c)
        print(f"| {c['loss']} | {c['mode']} | {c['layers']} x {c['seq']} x {c['mbs']} | {a:.2f} | {r:.2f} |")
    sys.exit(0)
print("| loss | AC | layers x seq x mbs | torch allocated | torch reserved | sim allocated | sim reserved | allocated error | reserved error |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|")
for c in configs:
    a, r = sim(c)
    ta, tr = float(c["max_alloc_gib"]), float(c["max_reserved_gib"])
    print(f"| {c['loss']} | {c['mode']} | {c['layers']} x {c['seq']} x {c['mbs']} | {ta:.2f} | {tr:.2f} | {a:.2f} | {r:.2f} | "
          f"{100 * (a / ta - 1):+.1f}% | {100 * (r / tr - 1):+.1f}% |")
