#!/usr/bin/env python3
"""What compute does to a communication kernel beside it (the reverse of the interference curves).

Runs 14b, 26 and 29 (one H200, validation/runs/) timed compute kernels beside a side kernel that
streams HBM with k SMs ("copy k", an SM-driven data mover like a communication kernel's CTAs) and
also recorded the side kernel's own rate beside each compute kernel and alone. This prints the
fraction of its alone rate the side kept beside each compute kernel, for the compute-bound kinds
(GEMMs at Llama-70B TP8 and DeepSeek-V3 shapes, cuDNN flash attention), and their median: the
rate an SM-paced communication kernel keeps while compute runs beside it
(hardware::kSmPacedCommBesideCompute). The short qkv GEMM is left out: between its ~120 us calls
the side ran alone (launch gaps), so its windows mix the two states. The memory-bound kernels
(run 26) are printed apart: beside them the side shares HBM bandwidth with a streaming kernel,
which a link-bound transfer does not.

Usage: python3 validation/comm_beside_compute.py [RUNS_DIR]
"""
import os
import re
import statistics
import sys

RUNS = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "runs")
SOURCES = [
    ("run14-interference/results-14b/interference_summary.txt", {"fc1", "fc2", "proj"}, "gemm"),
    ("run26-mem-interference/results/interference_summary.txt", {"fc1"}, "gemm"),
    ("run29-attn-interference/results/interference_summary.txt", {"fc1"}, "gemm"),
    ("run29-attn-interference/results/interference_summary.txt",
     {"attn_fwd_mla", "attn_fwdbwd_mla", "attn_fwd_gqa", "attn_fwdbwd_gqa"}, "attention"),
    ("run26-mem-interference/results/interference_summary.txt",
     {"cast_fp8", "transpose", "copy", "quant_1x128"}, "memory"),
]
K_RANGE = (8, 32)   # the SM counts communication kernels hold (DeepEP 20-24, NCCL 16-32)


def read(path):
    alone, beside = {}, []
    for line in open(path):
        f = line.split()
        if not f or f[0].startswith("#") or f[0] == "shape":
            continue
        if f[0] == "side_alone" and f[1] == "copy":
            m = re.search(r"k=\s*(\d+)\s+(\d+) GB/s", line)
            alone[int(m.group(1))] = float(m.group(2))
        elif len(f) >= 9 and f[1] == "copy":
            beside.append((f[0], int(f[2]), float(f[8])))
    return alone, beside


def main():
    kept = {"gemm": [], "attention": [], "memory": []}
    for rel, shapes, kind in SOURCES:
        alone, beside = read(os.path.join(RUNS, rel))
        for shape, k, gbs in beside:
            if shape not in shapes or not (K_RANGE[0] <= k <= K_RANGE[1]) or k not in alone:
                continue
            r = gbs / alone[k]
            kept[kind].append(r)
            print(f"{rel.split('/')[0]:24} {kind:9} {shape:16} k={k:2d} side {gbs:6.0f} of {alone[k]:6.0f} GB/s alone: {r:.3f}")
    compute = kept["gemm"] + kept["attention"]
    print(f"\ncompute-bound (GEMM + attention), k {K_RANGE[0]}-{K_RANGE[1]}: n={len(compute)} "
          f"median {statistics.median(compute):.3f} range {min(compute):.3f}-{max(compute):.3f}")
    for kind, v in kept.items():
        print(f"  {kind:9} n={len(v):2d} median {statistics.median(v):.3f} range {min(v):.3f}-{max(v):.3f}")


if __name__ == "__main__":
    main()
