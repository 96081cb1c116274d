#!/usr/bin/env python3
"""Assigns every row of validation/modern/rows.csv to the tuning or the held-out
half, deterministically (no randomness, no dependence on any simulator output).

Rule (also in SOURCES.md):
  stratum = (GPU type: H100 | B200 | GB200 | GB300) x (precision: bf16 | fp8)
            x (layout: cp for cp > 1, else nocp)
  group   = one layout family inside a stratum: same GPU type, model, layer count,
            precision, fp8 recipe class, seq, tp, pp, cp, vpp, mbs, FSDP on/off.
            Rows that differ only in GPU count / global batch (weak scaling) or
            in release are in one group, so a near-duplicate of a held-out row
            never sits in the tuning half.
  Inside a stratum, groups are visited in order of sha256(group key); each goes
  to the half that has fewer rows of that stratum so far (ties: tuning).  A
  stratum with a single group is split row by row instead, alternating in
  order of sha256(row id), so every stratum has rows in both halves.
"""
import csv, hashlib, os
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
rows = list(csv.DictReader(open(os.path.join(HERE, "rows.csv"))))

def h(s):
    return hashlib.sha256(s.encode()).hexdigest()

def recipe_class(r):
    if r["precision"] != "fp8":
        return "bf16"
    f = r["fp8_recipe"]
    return "mxfp8" if f.startswith("MXFP8") else "fp8"

def stratum(r):
    gpu = r["gpu_type"]
    lay = "cp" if r["cp"] not in ("", "1") else "nocp"
    return f"{gpu}/{r['precision']}/{lay}"

def group(r):
    fsdp = "fsdp" if r["fsdp"] not in ("", "0") else "nofsdp"
    return "|".join([r["gpu_type"], r["model"], r["layers"] or "full", recipe_class(r), r["seq"],
                     f"tp{r['tp']}", f"pp{r['pp']}", f"cp{r['cp']}", f"vpp{r['vpp'] or 1}",
                     f"mbs{r['mbs'] or 'ns'}", fsdp])

by_stratum = defaultdict(lambda: defaultdict(list))
for r in rows:
    by_stratum[stratum(r)][group(r)].append(r)

half = {}
for st in sorted(by_stratum):
    groups = by_stratum[st]
    if len(groups) == 1:
        (members,) = groups.values()
        for i, r in enumerate(sorted(members, key=lambda r: h(r["id"]))):
            half[r["id"]] = "tuning" if i % 2 == 0 else "heldout"
        continue
    count = {"tuning": 0, "heldout": 0}
    for g in sorted(groups, key=h):
        side = "tuning" if count["tuning"] <= count["heldout"] else "heldout"
        for r in groups[g]:
            half[r["id"]] = side
        count[side] += len(groups[g])

with open(os.path.join(HERE, "split.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["id", "half", "stratum", "group"])
    for r in sorted(rows, key=lambda r: r["id"]):
        w.writerow([r["id"], half[r["id"]], stratum(r), group(r)])

summary = defaultdict(lambda: {"tuning": 0, "heldout": 0})
for r in rows:
    summary[stratum(r)][half[r["id"]]] += 1
for st in sorted(summary):
    print(f"{st:22s} tuning {summary[st]['tuning']:3d}  heldout {summary[st]['heldout']:3d}")
print("total", sum(v["tuning"] for v in summary.values()), sum(v["heldout"] for v in summary.values()))
