#!/usr/bin/env python3
"""Run 56's kernels per (impl, shape, phase): results/srelu_kernels.csv (kernel names hold commas, quoted) ->
results/srelu.csv (impl, tokens, width, phase, kernels, us per iteration), the form tests/validation read.
usage: python3 summarize.py results/srelu_kernels.csv > results/srelu.csv
"""
import csv, sys
from collections import OrderedDict

agg = OrderedDict()
for r in csv.DictReader(open(sys.argv[1])):
    k = (r["impl"], r["tokens"], r["width"], r["phase"])
    a = agg.setdefault(k, [0.0, 0.0])
    a[0] += float(r["calls_per_iter"])
    a[1] += float(r["us_per_iter"])
w = csv.writer(sys.stdout, lineterminator="\n")
w.writerow(["impl", "tokens", "width", "phase", "kernels", "us"])
for (impl, t, wd, ph), (n, us) in agg.items():
    w.writerow([impl, t, wd, ph, f"{n:g}", f"{us:.2f}"])
