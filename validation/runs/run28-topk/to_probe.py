#!/usr/bin/env python3
"""Run 28's forward top-k samples as probe [[memory]] rows of kind "torch:topk" (mfusim calibrate fits
them as the `topk` kernel family: time = fixed + bytes / rate, the rate used by the cost model).

usage: python3 to_probe.py results/topk.csv > results/topk_probe.toml

Bytes are the model's count for the router's top-k (models/layer_kernels.cpp router_topk): the fp32
scores read (4 T E) and the values and indices written (12 T k). Kept: the GPU-bound samples, those with
at least 2^20 scores (T x E); below it the call takes the host's issue time of its kernels (36-57 us
whatever the size, like the backward's zeros + scatter at every size), which the model charges as
launches and host time, not as the kernel's rate.
"""
import csv
import sys

rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows:
    T, E, k = int(r["T"]), int(r["E"]), int(r["k"])
    if r["pass"] != "fwd" or T * E < 2 ** 20:
        continue
    b = 4 * T * E + 12 * T * k
    s = float(r["median_us"]) * 1e-6
    print("[[memory]]")
    print('kind = "torch:topk"')
    print(f'op = "torch.topk fp32 k={k}"')
    print(f'shape = "{T}x{E}"')
    print(f"bytes = {b}")
    print(f"seconds = {s:.6e}")
    print(f"bandwidth_gbs = {b / s * 1e-9:.1f}")
    print(f"# run 28 (validation/runs/run28-topk/results/topk.csv), median of 40")
    print()
