#!/usr/bin/env python3
"""Run 38's MPT blocks simulated (mpt-block.toml at each shape, 2 and 6 layers: the forward, backward and
recompute of the step's breakdown, their difference over 4 layers) against the measured forward + backward per
layer (validation/runs/run38-mpt-block/results/mpt_block.csv: (t6 - t2) / 4), or, with --predict, the simulated
per-layer time alone (written into the run's README before the call). Usage (repo root):
validation/fsdp/run38/compare.py [build/mfusim] [--predict]"""
import csv, os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from sim_cli import run_json  # noqa: E402

root = os.path.dirname(os.path.abspath(__file__))
args = [a for a in sys.argv[1:] if not a.startswith("--")]
mfusim = args[0] if args else "build/mfusim"
predict = "--predict" in sys.argv
results = os.path.join(root, "..", "..", "runs", "run38-mpt-block", "results", "mpt_block.csv")
SHAPES = [("1b", 2048, 16, 2048, 12, "none"), ("3b", 2560, 20, 2048, 8, "none"), ("7b", 4096, 32, 2048, 6, "none"),
          ("13b", 5120, 40, 2048, 16, "full"), ("30b", 7168, 56, 2048, 8, "full"), ("70b", 8192, 64, 2048, 8, "full")]


def sim_ms(d, heads, seq, mbs, ac, layers):
    sets = [f"model.layers={layers}", f"model.hidden={d}", f"model.ffn_hidden={4 * d}", f"model.heads={heads}",
            f"model.kv_heads={heads}", f"training.seq_len={seq}", f"training.micro_batch={mbs}",
            f"training.global_batch={mbs}", f"features.recompute=\"{ac}\""]
    b = run_json(mfusim, os.path.join(root, "mpt-block.toml"), sets)["breakdown_s"]
    return 1e3 * (b["forward"] + b["backward"] + b["recompute"])


def per_layer(d, heads, seq, mbs, ac):
    return (sim_ms(d, heads, seq, mbs, ac, 6) - sim_ms(d, heads, seq, mbs, ac, 2)) / 4


measured = {}
if not predict:
    for r in csv.DictReader(open(results)):
        measured.setdefault(r["shape"], {})[int(r["layers"])] = float(r["ms_median"])
print("| shape | d | mbs | AC | " + ("sim ms per layer |" if predict else "measured ms per layer | sim | error |"))
print("|---|---:|---:|---|" + ("---:|" if predict else "---:|---:|---:|"))
for shape, d, heads, seq, mbs, ac in SHAPES:
    s = per_layer(d, heads, seq, mbs, ac)
    if predict:
        print(f"| {shape} | {d} | {mbs} | {ac} | {s:.2f} |")
    elif shape in measured and 2 in measured[shape] and 6 in measured[shape]:
        m = (measured[shape][6] - measured[shape][2]) / 4
        print(f"| {shape} | {d} | {mbs} | {ac} | {m:.2f} | {s:.2f} | {100 * (s / m - 1):+.1f}% |")
