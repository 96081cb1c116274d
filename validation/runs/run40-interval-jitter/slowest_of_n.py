#!/usr/bin/env python3
"""Run 40's probe rows: the expected slowest of N identical compute intervals over their mean.

Reads results/intervals_<workload>.csv (jitter.py) and prints [[slowest_of_n]] rows for the probe file
(hardware/calibration/h200-probe.toml), which `mfusim calibrate` turns into the calibration's
[slowest_of_n] table. E[max of N] is exact for the empirical distribution of the n measured durations
x_(1) <= ... <= x_(n): sum_i x_(i) ((i/n)^N - ((i-1)/n)^N). N runs to 256: beyond it the two halves of the
run disagree (a handful of outliers in 23,904 units decide the tail).
Usage: slowest_of_n.py [RESULTS_DIR] [WORKLOAD]
"""
import csv, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
RES = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "results")
WORKLOAD = sys.argv[2] if len(sys.argv) > 2 else "layer70b_tp8"
GROUPS = [2, 4, 8, 16, 32, 64, 128, 256]

d = [float(r["duration_ms"]) for r in csv.DictReader(open(os.path.join(RES, f"intervals_{WORKLOAD}.csv")))]
s = sorted(d)
n = len(s)
mean = sum(d) / n
for N in GROUPS:
    e = sum(s[i - 1] * ((i / n) ** N - ((i - 1) / n) ** N) for i in range(1, n + 1))
    print(f'[[slowest_of_n]]\nworkload = "{WORKLOAD}"  # validation/runs/run40-interval-jitter\n'
          f"group = {N}\nratio = {e / mean:.5f}\nunits = {n}\n")
