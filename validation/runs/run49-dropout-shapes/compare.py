#!/usr/bin/env python3
"""Run 49's calls against the shipped fit's dropout times (hardware/calibration/h200.toml, fitted on run 48 alone):
per call, the measured extra time of dropout against b x heads x seq^2 (halved when causal) x the fit's time
per score, and the time with dropout against the measured time without plus that price.
Usage: compare.py results/dropout_shapes.csv [hardware/calibration/h200.toml]
"""
import csv, re, sys


def fit(path):
    sec, out = None, {}
    for line in open(path):
        m = re.match(r"\[(\w+)\]", line)
        if m:
            sec = m.group(1)
        m = re.match(r"dropout_(fwd|bwd)_ps_per_score = ([0-9.e+-]+)", line)
        if m and sec in ("attention", "attention_fa2"):
            out[("cudnn" if sec == "attention" else "flash", m.group(1))] = float(m.group(2)) * 1e-12
    return out


def main():
    c = fit(sys.argv[2] if len(sys.argv) > 2 else "hardware/calibration/h200.toml")
    rows = list(csv.DictReader(open(sys.argv[1])))
    base = {(r["backend"], r["case"], r["pass"]): float(r["ms"]) for r in rows if float(r["dropout"]) == 0}
    print(f"{'kernel':6} {'case':22} {'pass':4} {'none ms':>8} {'drop ms':>8} {'extra':>7} {'priced':>7} {'x/pr':>5} {'time err':>8}")
    errs = []
    for r in rows:
        if float(r["dropout"]) == 0 or (r["backend"], r["case"], r["pass"]) not in base:
            continue
        t0, t = base[(r["backend"], r["case"], r["pass"])], float(r["ms"])
        scores = int(r["b"]) * int(r["H"]) * int(r["S"]) ** 2 * (0.5 if r["causal"] == "True" else 1.0)
        pr = scores * c[(r["backend"], r["pass"])] * 1e3
        e = (t0 + pr - t) / t
        errs.append(abs(e))
        print(f"{r['backend']:6} {r['case']:22} {r['pass']:4} {t0:8.3f} {t:8.3f} {t - t0:7.3f} {pr:7.3f} "
              f"{(t - t0) / pr:5.2f} {100 * e:+7.1f}%")
    errs.sort()
    if errs:
        print(f"{len(errs)} calls: time with dropout, median |error| {100 * errs[len(errs) // 2]:.1f}%, max {100 * errs[-1]:.1f}%")


if __name__ == "__main__":
    main()
