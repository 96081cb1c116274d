#!/usr/bin/env python3
"""Run 28: the MoE router's top-k as torch runs it (torch.topk over fp32 router scores), at several
token counts, expert counts and k, on one H200, with its backward (the gradient scattered into a
zeroed [T, E] tensor, as autograd's TopkBackward does).

usage: python3 topk.py OUTDIR
Writes OUTDIR/topk.csv: T, E, k, pass (fwd | bwd), median_us, p10_us, p90_us (CUDA events around each
call after warm-up; 40 calls). Fits the cost model's `topk` kernel family (hardware/kernel.h) through
`mfusim calibrate` (probe samples written by to_probe.py).
"""
import csv
import statistics
import sys

import torch

dev = "cuda"
rows = []


def timeit(fn, n=40, warm=8):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(n):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1e3)
    ts.sort()
    return round(statistics.median(ts), 2), round(ts[len(ts) // 10], 2), round(ts[(9 * len(ts)) // 10], 2)


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    print(torch.__version__, torch.cuda.get_device_name(), flush=True)
    cases = [(T, E, k) for T in (2048, 4096, 8192, 16384) for E, k in ((8, 2), (64, 6), (128, 8), (256, 8), (256, 2))]
    cases += [(T, 8, 4) for T in (4096, 16384)]   # DeepSeek-V3's top-4 of 8 groups
    for T, E, k in cases:
        x = torch.randn(T, E, device=dev, dtype=torch.float32)
        g = torch.randn(T, k, device=dev, dtype=torch.float32)
        _, idx = torch.topk(x, k, dim=-1)

        def fwd():
            return torch.topk(x, k, dim=-1)

        def bwd():   # TopkBackward: value_selecting_reduction_backward = zeros(T, E).scatter_(1, idx, g)
            return torch.zeros(T, E, device=dev, dtype=torch.float32).scatter_(1, idx, g)
        for name, fn in (("fwd", fwd), ("bwd", bwd)):
            r = [T, E, k, name, *timeit(fn)]
            rows.append(r)
            print(*r, flush=True)
    with open(f"{out}/topk.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["T", "E", "k", "pass", "median_us", "p10_us", "p90_us"])
        w.writerows(rows)


if __name__ == "__main__":
    main()
