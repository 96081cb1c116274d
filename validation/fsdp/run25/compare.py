#!/usr/bin/env python3
"""Run 25's FSDP2 configurations simulated (fsdp2-4x8192x1.toml with the shape and AC of each) against
torch's max allocated / max reserved (validation/runs/run25-alloc-trace/results/summary.csv).
The simulator's peaks include its 2 GiB runtime reserve (CUDA context, NCCL; step/simulate.h), which torch's
allocator counters do not: it is taken off here. Usage (repo root): validation/fsdp/run25/compare.py [build/mfusim]"""
import csv, json, os, subprocess, sys

root = os.path.dirname(os.path.abspath(__file__))
mfusim = sys.argv[1] if len(sys.argv) > 1 else "build/mfusim"
summary = os.path.join(root, "..", "..", "runs", "run25-alloc-trace", "results", "summary.csv")
ac = {"none": "none", "full": "full", "op": "selective-op"}
print("| AC | layers x seq x mbs | torch allocated | torch reserved | sim allocated | sim reserved | alloc error | reserved error |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for row in csv.DictReader(open(summary)):
    if row["config"] != "fsdp2":
        continue
    sets = [f"model.layers={row['layers']}", f"training.seq_len={row['seq']}", f"training.micro_batch={row['mbs']}",
            f"training.global_batch={row['mbs']}", f"features.recompute=\"{ac[row['mode']]}\""]
    cmd = [mfusim, "run", os.path.join(root, "fsdp2-4x8192x1.toml"), "--json"] + sum([["--set", s] for s in sets], [])
    m = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)["memory"]
    a, r = m["peak_gib"] - 2.0, m["peak_reserved_gib"] - 2.0
    ta, tr = float(row["max_alloc_gib"]), float(row["max_reserved_gib"])
    print(f"| {row['mode']} | {row['layers']} x {row['seq']} x {row['mbs']} | {ta:.2f} | {tr:.2f} | {a:.2f} | {r:.2f} | "
          f"{100 * (a / ta - 1):+.1f}% | {100 * (r / tr - 1):+.1f}% |")
